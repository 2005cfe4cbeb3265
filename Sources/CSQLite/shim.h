#include <sqlite3.h>

#ifdef __linux__
// malloc_trim: hands freed heap back to the system after a bulk load shrinks the page cache (glibc only; the
// Swift Glibc module does not export malloc.h).
#include <malloc.h>
#endif

// sqlite3_config is variadic, which Swift cannot call: the one setting the backend makes through it.
static inline int storeapi_sqlite3_config_memstatus(int on) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, on); }
