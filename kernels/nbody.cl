// One step of an all-pairs gravitational n-body simulation (positions xyzw, w = mass).

__kernel void nbody_step(__global const float4* pos, __global float4* vel,
                         __global float4* new_pos, const int n) {
  int i = get_global_id(0);
  if (i >= n)
    return;
  const float dt = 0.01f;
  const float softening = 1e-3f;
  float4 p = pos[i];
  float3 acc = (float3)(0.0f, 0.0f, 0.0f);
  for (int j = 0; j < n; ++j) {
    float4 q = pos[j];
    float3 d = q.xyz - p.xyz;
    float inv = rsqrt(dot(d, d) + softening);
    acc += d * (q.w * inv * inv * inv);
  }
  float4 v = vel[i];
  v.xyz += acc * dt;
  vel[i] = v;
  new_pos[i] = (float4)(p.xyz + v.xyz * dt, p.w);
}

__kernel void kinetic_energy(__global const float4* pos, __global const float4* vel,
                             __global float* energy, const int n) {
  int i = get_global_id(0);
  if (i < n)
    energy[i] = 0.5f * pos[i].w * dot(vel[i].xyz, vel[i].xyz);
}
