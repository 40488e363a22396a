# A small CUDA test suite for the pytest plugin on the GPU machine: one test leaks device memory
# (cudaMalloc through CuPy's runtime binding, never freed), one allocates and frees, one leaks from
# a method of a test class.
import cupy


def test_frees_what_it_allocates():
    p = cupy.cuda.runtime.malloc(1 << 20)
    cupy.cuda.runtime.free(p)


def test_leaks_a_buffer():
    cupy.cuda.runtime.malloc(4 << 20)  # never freed: cuaudit must name this test


class TestModel:
    def test_leaks_from_a_method(self):
        cupy.cuda.runtime.malloc(2 << 20)  # never freed


def test_uses_the_device():
    a = cupy.arange(1024, dtype=cupy.float32)
    assert float((a * 2).sum()) == 2 * float(a.sum())
