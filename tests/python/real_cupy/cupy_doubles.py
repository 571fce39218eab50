"""Import before cupy: runs real CuPy's pool on the CUDA test doubles
(libcuda.so.1 of tests/cuda, on LD_LIBRARY_PATH).  See _cupy_doubles.c."""
import cupy_backends.cuda.api.runtime as _rt
import _cupy_doubles

swapped = _cupy_doubles.install(_rt)

_next = [0x9000]


def _handle(*a, **k):
    _next[0] += 16
    return _next[0]


def _none(*a, **k):
    return None


_py = {
    'malloc': _cupy_doubles.malloc,
    'free': _cupy_doubles.free,
    'getDevice': lambda: 0,
    'setDevice': lambda d: None,
    'getDeviceCount': lambda: 1,
    'runtimeGetVersion': lambda: 13000,
    'driverGetVersion': lambda: 13000,
    '_getCUDAMajorVersion': lambda: 13,
    '_getLocalRuntimeVersion': lambda: 13000,
    'deviceGetAttribute': lambda a, d: {75: 9, 76: 0, 16: 132, 1: 1024}.get(a, 0),
    'getDeviceProperties': lambda d: {'name': b'double', 'totalGlobalMem': 80 << 30,
                                      'major': 9, 'minor': 0},
    'memGetInfo': lambda: (64 << 30, 80 << 30),
    'deviceSynchronize': _none,
    'streamCreate': _handle, 'streamCreateWithFlags': _handle,
    'streamCreateWithPriority': _handle, 'streamDestroy': _none,
    'streamSynchronize': _none, 'streamQuery': _none,
    'streamIsCapturing': lambda s: False,
    'eventCreate': _handle, 'eventCreateWithFlags': _handle,
    'eventDestroy': _none, 'eventSynchronize': _none, 'eventQuery': _none,
    'eventRecord': _none, 'streamWaitEvent': _none,
}
for _k, _v in _py.items():
    setattr(_rt, _k, _v)
