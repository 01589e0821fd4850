#include "engine/kv/prompt_cache_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <tuple>

namespace sparrow {

namespace {

constexpr uint64_t kP1 = 11400714785074694791ull, kP2 = 14029467366897019727ull,
                   kP3 = 1609587929392839161ull, kP4 = 9650029242287828579ull,
                   kP5 = 2870177450012600261ull;

uint64_t Rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint64_t Round(uint64_t acc, uint64_t input) {
  acc += input * kP2;
  return Rotl(acc, 31) * kP1;
}

uint64_t Merge(uint64_t acc, uint64_t v) {
  acc ^= Round(0, v);
  return acc * kP1 + kP4;
}

// The header's fields at fixed offsets.
constexpr char kMagic[8] = {'S', 'P', 'R', 'W', 'K', 'V', 'B', '\n'};
constexpr size_t kOffVersion = 8, kOffHeaderBytes = 12, kOffDigest = 16, kOffTypeK = 32,
                 kOffTypeV = 36, kOffLayers = 40, kOffKvDim = 48, kOffBlockSize = 56, kOffHash = 64,
                 kOffPayloadBytes = 72, kOffPayloadSum = 80, kOffHeaderSum = 120;
constexpr size_t kDigestBytes = 16;

template <typename T>
void Put(uint8_t* h, size_t off, T v) {
  std::memcpy(h + off, &v, sizeof(T));
}

template <typename T>
T Get(const uint8_t* h, size_t off) {
  T v;
  std::memcpy(&v, h + off, sizeof(T));
  return v;
}

std::string Hex(uint64_t v) {
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(v));
  return out;
}

std::string TypeName(uint32_t t) {
  return std::string(TensorTypeName(static_cast<TensorType>(t)));
}

}  // namespace

uint64_t Xxh64(const void* data, size_t n, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
  const uint8_t* const end = p + n;
  uint64_t h;
  if (n >= 32) {
    uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    for (; p + 32 <= end; p += 32) {
      v1 = Round(v1, Load64(p));
      v2 = Round(v2, Load64(p + 8));
      v3 = Round(v3, Load64(p + 16));
      v4 = Round(v4, Load64(p + 24));
    }
    h = Rotl(v1, 1) + Rotl(v2, 7) + Rotl(v3, 12) + Rotl(v4, 18);
    h = Merge(h, v1);
    h = Merge(h, v2);
    h = Merge(h, v3);
    h = Merge(h, v4);
  } else {
    h = seed + kP5;
  }
  h += static_cast<uint64_t>(n);
  for (; p + 8 <= end; p += 8) h = Rotl(h ^ Round(0, Load64(p)), 27) * kP1 + kP4;
  if (p + 4 <= end) {
    h = Rotl(h ^ (static_cast<uint64_t>(Load32(p)) * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p) h = Rotl(h ^ (*p * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

std::array<uint8_t, kKvBlockHeaderBytes> EncodeKvBlockHeader(const KvBlockFileIdentity& id,
                                                             uint64_t hash,
                                                             std::span<const uint8_t> payload) {
  std::array<uint8_t, kKvBlockHeaderBytes> h{};
  std::memcpy(h.data(), kMagic, sizeof(kMagic));
  Put<uint32_t>(h.data(), kOffVersion, kKvBlockFileVersion);
  Put<uint32_t>(h.data(), kOffHeaderBytes, static_cast<uint32_t>(kKvBlockHeaderBytes));
  std::memcpy(h.data() + kOffDigest, id.model_digest.data(),
              std::min(kDigestBytes, id.model_digest.size()));
  Put<uint32_t>(h.data(), kOffTypeK, static_cast<uint32_t>(id.types.k));
  Put<uint32_t>(h.data(), kOffTypeV, static_cast<uint32_t>(id.types.v));
  Put<int64_t>(h.data(), kOffLayers, id.n_layer);
  Put<int64_t>(h.data(), kOffKvDim, id.kv_dim);
  Put<int64_t>(h.data(), kOffBlockSize, id.block_size);
  Put<uint64_t>(h.data(), kOffHash, hash);
  Put<uint64_t>(h.data(), kOffPayloadBytes, payload.size());
  Put<uint64_t>(h.data(), kOffPayloadSum, Xxh64(payload.data(), payload.size()));
  Put<uint64_t>(h.data(), kOffHeaderSum, Xxh64(h.data(), kOffHeaderSum));
  return h;
}

Result<uint64_t> CheckKvBlockHeader(std::span<const uint8_t> header, const KvBlockFileIdentity& id,
                                    uint64_t hash, uint64_t file_size) {
  if (header.size() < kKvBlockHeaderBytes || file_size < kKvBlockHeaderBytes) {
    return Corrupt("shorter than its " + std::to_string(kKvBlockHeaderBytes) + "-byte header");
  }
  const uint8_t* h = header.data();
  if (std::memcmp(h, kMagic, sizeof(kMagic)) != 0) return Corrupt("not a KV block file (magic)");
  const auto version = Get<uint32_t>(h, kOffVersion);
  if (version != kKvBlockFileVersion) {
    return Corrupt("format version " + std::to_string(version) + ", this build reads " +
                   std::to_string(kKvBlockFileVersion));
  }
  if (Get<uint64_t>(h, kOffHeaderSum) != Xxh64(h, kOffHeaderSum)) {
    return Corrupt("header checksum mismatch");
  }
  const std::string digest(reinterpret_cast<const char*>(h + kOffDigest), kDigestBytes);
  if (digest != id.model_digest) {
    return InvalidArgument("written for model " + digest + ", this model is " + id.model_digest);
  }
  const auto k = Get<uint32_t>(h, kOffTypeK), v = Get<uint32_t>(h, kOffTypeV);
  if (k != static_cast<uint32_t>(id.types.k) || v != static_cast<uint32_t>(id.types.v)) {
    return InvalidArgument("KV types " + TypeName(k) + "/" + TypeName(v) + ", this cache holds " +
                           TypeName(static_cast<uint32_t>(id.types.k)) + "/" +
                           TypeName(static_cast<uint32_t>(id.types.v)));
  }
  for (const auto& [off, name, want] :
       {std::tuple{kOffLayers, "n_layer", id.n_layer}, std::tuple{kOffKvDim, "kv_dim", id.kv_dim},
        std::tuple{kOffBlockSize, "block_size", id.block_size}}) {
    const auto got = Get<int64_t>(h, off);
    if (got != want) {
      return InvalidArgument(std::string(name) + " " + std::to_string(got) + ", expected " +
                             std::to_string(want));
    }
  }
  const auto got_hash = Get<uint64_t>(h, kOffHash);
  if (got_hash != hash) return Corrupt("chain hash " + Hex(got_hash) + ", named " + Hex(hash));
  const auto payload = Get<uint64_t>(h, kOffPayloadBytes);
  if (payload != static_cast<uint64_t>(id.block_bytes) ||
      file_size != kKvBlockHeaderBytes + payload) {
    return Corrupt("payload of " + std::to_string(payload) + " bytes in a file of " +
                   std::to_string(file_size) + "; a block takes " + std::to_string(id.block_bytes));
  }
  return Get<uint64_t>(h, kOffPayloadSum);
}

}  // namespace sparrow
