/*
 * places.c - functions named as CuPy's Cython module names them, for the
 * native stacks of the imported logs in test_models_cli.py: a collection's
 * gc_start stack says where it started only through such names (the replay
 * places it by the innermost one its model's table knows).
 */
#define PLACE(name) \
    __attribute__((noinline, used)) void name(void) { __asm__ volatile(""); }

PLACE(__pyx_f_4cupy_4cuda_6memory__append_to_free_list)
PLACE(__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__arena)
PLACE(__pyx_f_4cupy_4cuda_6memory__compact_index)
PLACE(__pyx_f_4cupy_4cuda_6memory__try_malloc)
PLACE(__pyx_f_4cupy_4cuda_6memory_12PooledMemory_free)
PLACE(__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool_malloc)
PLACE(__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool__malloc)
PLACE(__pyx_f_4cupy_4cuda_6memory_6_Chunk_split)
PLACE(__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool_free_all_blocks)
PLACE(some_unrelated_function)
