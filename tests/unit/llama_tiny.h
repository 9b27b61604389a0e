/*
 * llama_tiny.h — the tests' tiny Llama-style model (examples/llama): 2 layers of dim 32, 4 heads
 * (2 for K/V), FFN 48, 16 tokens x 2 sequences, a vocabulary of 64, seed 7; fast enough to run
 * whole steps in a unit test.
 */
#ifndef TALLY_TEST_LLAMA_TINY_H
#define TALLY_TEST_LLAMA_TINY_H

#include "../../examples/llama/llama.h"

static inline llama_config llama_tiny(int threads)
{
    llama_config c;
    llama_config_default(&c);
    c.layers = 2;
    c.dim = 32;
    c.heads = 4;
    c.kv_heads = 2;
    c.ffn = 48;
    c.seq = 16;
    c.batch = 2;
    c.vocab = 64;
    c.threads = threads;
    c.text_bytes = 16;
    c.seed = 7;
    return c;
}

#endif
