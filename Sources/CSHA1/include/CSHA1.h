#ifndef CSHA1_H
#define CSHA1_H

#include <stdint.h>

// SHA-1's compression function on the processor's SHA extensions, for the Core Data backend's derived global IDs
// (one block per record read or written). Swift cannot reach these instructions; C can, one function at a time.

/// Non-zero when this processor has the SHA extensions (and SSSE3 and SSE4.1, which the code also uses).
int csha1_has_hardware(void);

/// Compresses one 64-byte message block (bytes in message order) into `state` (five words, host order), as
/// SHA-1 does. Call only when `csha1_has_hardware()` said yes; elsewhere it leaves `state` as it is.
void csha1_compress_block(uint32_t state[5], const uint8_t block[64]);

#endif
