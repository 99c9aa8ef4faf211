"""Writes an OpenCL workload shaped like a photo editor's kernels (issue 17): many programs that
share headers, dozens of kernels each, of which an application launches few.

usage: make_workload.py DIR [--programs N] [--kernels K]
Deterministic: the same arguments write the same bytes. DIR gets common/*.h (the shared headers)
and prog_NN.cl with its own header prog_NN.h (the edit-and-run loop edits one); build each
with "-I DIR". Prints the list of program files, one per line.
"""
import argparse
import os

HEADERS = {
    "common/color.h": """#pragma once
// Colour-space helpers shared by every program.
inline float4 rgb_to_yuv(float4 c) {
  return (float4)(0.299f * c.x + 0.587f * c.y + 0.114f * c.z,
                  -0.14713f * c.x - 0.28886f * c.y + 0.436f * c.z,
                  0.615f * c.x - 0.51499f * c.y - 0.10001f * c.z, c.w);
}
inline float4 yuv_to_rgb(float4 c) {
  return (float4)(c.x + 1.13983f * c.z, c.x - 0.39465f * c.y - 0.58060f * c.z,
                  c.x + 2.03211f * c.y, c.w);
}
inline float luminance(float4 c) { return dot(c.xyz, (float3)(0.2126f, 0.7152f, 0.0722f)); }
inline float4 gamma_encode(float4 c, float g) {
  return (float4)(native_powr(fmax(c.x, 0.0f), g), native_powr(fmax(c.y, 0.0f), g),
                  native_powr(fmax(c.z, 0.0f), g), c.w);
}
""",
    "common/sampling.h": """#pragma once
#include "color.h"
// Clamped reads of a planar float4 image, shared by every program.
inline int clampi(int v, int lo, int hi) { return min(max(v, lo), hi); }
inline float4 read_px(global const float4* in, int w, int h, int x, int y) {
  return in[clampi(y, 0, h - 1) * w + clampi(x, 0, w - 1)];
}
inline float4 bilinear(global const float4* in, int w, int h, float fx, float fy) {
  const int x = (int)floor(fx), y = (int)floor(fy);
  const float ax = fx - x, ay = fy - y;
  const float4 a = read_px(in, w, h, x, y), b = read_px(in, w, h, x + 1, y);
  const float4 c = read_px(in, w, h, x, y + 1), d = read_px(in, w, h, x + 1, y + 1);
  return mix(mix(a, b, ax), mix(c, d, ax), ay);
}
""",
    "common/tonecurve.h": """#pragma once
#include "color.h"
#define CURVE_POINTS 16
// A piecewise-linear tone curve, shared by every program.
inline float apply_curve(constant float* curve, float v) {
  const float t = clamp(v, 0.0f, 1.0f) * (CURVE_POINTS - 1);
  const int i = min((int)t, CURVE_POINTS - 2);
  return mix(curve[i], curve[i + 1], t - i);
}
""",
}

# Bodies of the generated kernels; {k} is the kernel's number, {r} a radius, {c} a constant.
BODIES = [
    """  float4 acc = (float4)(0.0f);
  float wsum = 0.0f;
  for (int dy = -{r}; dy <= {r}; ++dy)
    for (int dx = -{r}; dx <= {r}; ++dx) {{
      const float wgt = native_exp(-(dx * dx + dy * dy) * {c}f);
      acc += wgt * read_px(in, w, h, x + dx, y + dy);
      wsum += wgt;
    }}
  out[y * w + x] = acc / wsum;""",
    """  const float4 p = read_px(in, w, h, x, y);
  float4 yuv = rgb_to_yuv(p);
  yuv.x = apply_curve(curve, yuv.x) * {c}f + (1.0f - {c}f) * yuv.x;
  out[y * w + x] = gamma_encode(yuv_to_rgb(yuv), 1.0f / (2.2f + {k} * 0.01f));""",
    """  const float4 c0 = read_px(in, w, h, x, y);
  float4 hi = (float4)(0.0f);
  for (int i = 1; i <= {r}; ++i)
    hi += read_px(in, w, h, x + i, y) + read_px(in, w, h, x - i, y) +
          read_px(in, w, h, x, y + i) + read_px(in, w, h, x, y - i);
  hi = c0 - hi / (4.0f * {r});
  const float l = luminance(c0);
  out[y * w + x] = c0 + hi * ({c}f * smoothstep(0.05f, 0.6f, l));""",
    """  const float cx = w * 0.5f, cy = h * 0.5f;
  const float dx = (x - cx) / cx, dy = (y - cy) / cy;
  const float r2 = dx * dx + dy * dy;
  const float k = 1.0f + {c}f * r2 + 0.0{k}f * r2 * r2;
  out[y * w + x] = bilinear(in, w, h, cx + dx * k * cx, cy + dy * k * cy);""",
    """  float4 lo = (float4)(1e9f), hi = (float4)(-1e9f);
  for (int dy = -{r}; dy <= {r}; ++dy)
    for (int dx = -{r}; dx <= {r}; ++dx) {{
      const float4 v = read_px(in, w, h, x + dx, y + dy);
      lo = fmin(lo, v);
      hi = fmax(hi, v);
    }}
  const float4 p = read_px(in, w, h, x, y);
  out[y * w + x] = mix(p, (lo + hi) * 0.5f, {c}f);""",
]


def program(index, kernels):
    lines = [
        f"// Generated program {index} of the issue-17 workload (bench/opencl/make_workload.py).",
        '#include "common/sampling.h"',
        '#include "common/tonecurve.h"',
        f'#include "prog_{index:02d}.h"',
        "",
    ]
    for k in range(kernels):
        body = BODIES[(index + k) % len(BODIES)].format(
            k=k, r=1 + (index + k) % 3, c=f"0.{(index * 7 + k * 13) % 90 + 10}")
        lines += [
            f"kernel void p{index:02d}_k{k:02d}(global const float4* in, global float4* out,",
            "                           constant float* curve, int w, int h) {",
            "  const int x = get_global_id(0), y = get_global_id(1);",
            "  if (x >= w || y >= h) return;",
            body,
            "}",
            "",
        ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--programs", type=int, default=24)
    parser.add_argument("--kernels", type=int, default=24)
    args = parser.parse_args()
    os.makedirs(os.path.join(args.dir, "common"), exist_ok=True)
    for name, text in HEADERS.items():
        with open(os.path.join(args.dir, name), "w") as f:
            f.write(text)
    for i in range(args.programs):
        with open(os.path.join(args.dir, f"prog_{i:02d}.h"), "w") as f:
            f.write(f"#pragma once\n// Program {i}'s own settings.\n#define PROGRAM_ID {i}\n")
        path = os.path.join(args.dir, f"prog_{i:02d}.cl")
        with open(path, "w") as f:
            f.write(program(i, args.kernels))
        print(path)


if __name__ == "__main__":
    main()
