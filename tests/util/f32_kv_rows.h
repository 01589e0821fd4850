#pragma once
// The rows of an f32 KV cache (a pool, a sequence's view, a mirror) as floats, for tests that
// write and read single values.
namespace sparrow::testing {

template <typename Kv, typename... Args>
float* Key(Kv& kv, Args... args) {
  return reinterpret_cast<float*>(kv.KeyRow(args...));
}

template <typename Kv, typename... Args>
float* Value(Kv& kv, Args... args) {
  return reinterpret_cast<float*>(kv.ValueRow(args...));
}

}  // namespace sparrow::testing
