#pragma once
// The prompt cache's file format: one file per full KV block, a fixed 128-byte header then the
// block's bytes as the pool stores them (keys of every layer, then values). The header names
// what the bytes are valid for (the model's digest, the KV types, the shape, the token chain's
// hash), carries a format version and checksums of itself and of the payload, so that a file
// of another model, type, version, or one damaged on flash is refused, never used.
// Little-endian (every target Sparrow builds for). Thread-safe (pure functions).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "engine/common/result.h"
#include "engine/runtime/kv_cache.h"

namespace sparrow {

inline constexpr uint32_t kKvBlockFileVersion = 1;
inline constexpr size_t kKvBlockHeaderBytes = 128;

// What a block's bytes depend on besides its tokens.
struct KvBlockFileIdentity {
  std::string model_digest;  // ModelDigest of the GGUF: 16 hex digits
  KvTypes types;
  int64_t n_layer = 0, kv_dim = 0, block_size = 0;
  int64_t block_bytes = 0;  // KvBlockPool::BlockBytes of the above
};

// XXH64 (Yann Collet's xxHash, 64-bit) of `n` bytes: fast enough to check a block as it is read
// (several GB/s), and any corrupted byte changes it.
uint64_t Xxh64(const void* data, size_t n, uint64_t seed = 0);

// The header of the file holding the block `payload` (id.block_bytes bytes) of chain `hash`.
std::array<uint8_t, kKvBlockHeaderBytes> EncodeKvBlockHeader(const KvBlockFileIdentity& id,
                                                             uint64_t hash,
                                                             std::span<const uint8_t> payload);

// Checks a header read from a file of `file_size` bytes against what this process expects for
// `hash`, and returns the payload's checksum to compare once it is read. Corrupt (damage, a
// short file, another format version) or InvalidArgument (another model, type or shape), the
// message naming the field and both values.
Result<uint64_t> CheckKvBlockHeader(std::span<const uint8_t> header, const KvBlockFileIdentity& id,
                                    uint64_t hash, uint64_t file_size);

}  // namespace sparrow
