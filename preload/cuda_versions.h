/*
 * cuda_versions.h - INFO records naming the CUDA driver and runtimes in use.
 * The log header is written before any CUDA library is loaded, so these
 * facts arrive later, once each, when a traced call first meets them.
 */
#ifndef TRACE_CUDA_VERSIONS_H
#define TRACE_CUDA_VERSIONS_H

/* "cuda_driver_version" = cuDriverGetVersion() of the libcuda.so.1 that
 * holds this driver function. */
void cuda_versions_note_driver(const void *fn);

/* "cuda_runtime" = "<library> version=<cudaRuntimeGetVersion()>" for the
 * object holding this runtime function (no version: a static runtime). */
void cuda_versions_note_runtime(const void *fn);

#endif
