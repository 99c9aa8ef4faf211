#pragma once

/// Umbrella header: the backend-neutral API. Backends have their own headers
/// (<jitcache/opencl.hpp>, <jitcache/cuda.hpp>, <jitcache/hip.hpp>).
#include <jitcache/cache.hpp>
#include <jitcache/config.hpp>
#include <jitcache/digest.hpp>
#include <jitcache/entry.hpp>
#include <jitcache/error.hpp>
#include <jitcache/expected.hpp>
#include <jitcache/key.hpp>
#include <jitcache/stats.hpp>
#include <jitcache/store.hpp>
#include <jitcache/version.hpp>
