"""A PyOpenCL program as its users write them: ElementwiseKernel, ReductionKernel and
pyopencl.array operations (each of which builds programs from generated source), on fixed input,
printing its results, so that a run under the jitcache OpenCL layer can be compared with one
without it."""
import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from pyopencl.elementwise import ElementwiseKernel
from pyopencl.reduction import ReductionKernel

context = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(context)

n = 1000
a_host = np.arange(n, dtype=np.float32) / 7
b_host = np.linspace(-1, 1, n).astype(np.float32)
a = cl_array.to_device(queue, a_host)
b = cl_array.to_device(queue, b_host)

lin_comb = ElementwiseKernel(context, "float k, float *a, float *b, float *c",
                             "c[i] = k * a[i] + b[i]", "lin_comb")
c = cl_array.empty_like(a)
lin_comb(np.float32(2.5), a, b, c)
print("lin_comb", np.array2string(c.get()[:8], precision=5), float(c.get().sum()))

dot = ReductionKernel(context, np.float32, neutral="0", reduce_expr="a+b",
                      map_expr="x[i]*y[i]", arguments="__global float *x, __global float *y")
print("dot", float(dot(a, b).get()))

print("array sum", float(cl_array.sum(a).get()))
print("array max", float(cl_array.max(b).get()))
d = (a * 3 + b) / 2 - a
print("array ops", np.array2string(d.get()[:8], precision=5))
print("array dot", float(cl_array.dot(a, b).get()))
mask = cl_array.if_positive(b, a, b)
print("if_positive", np.array2string(mask.get()[-4:], precision=5))
print("astype", cl_array.arange(queue, 5, dtype=np.int32).astype(np.float64).get())

try:
    cl.Program(context, "kernel void broken(global int* x) { x[0] = nope; }").build()
except cl.RuntimeError as e:
    print("compile error raised:", type(e).__name__, "build program failure" in str(e).lower()
          or "BUILD_PROGRAM_FAILURE" in str(e))
