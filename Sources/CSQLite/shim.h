#include <sqlite3.h>

#ifdef __linux__
// malloc_trim: hands freed heap back to the system after a bulk load shrinks the page cache (glibc only; the
// Swift Glibc module does not export malloc.h).
#include <malloc.h>
#endif
