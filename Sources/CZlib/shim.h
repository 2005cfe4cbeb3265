#include <zlib.h>

// inflateInit2 is a macro, which Swift cannot call: the one initialisation the Core Data backend makes through it
// (raw DEFLATE when window_bits is negative).
static inline int storeapi_inflate_init2(z_stream *stream, int window_bits) {
    return inflateInit2(stream, window_bits);
}

// deflateInit2 is a macro too: raw DEFLATE output for a model cache a writer emits.
static inline int storeapi_deflate_init2(z_stream *stream, int level, int window_bits) {
    return deflateInit2(stream, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
}
