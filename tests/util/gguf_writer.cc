#include "tests/util/gguf_writer.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "engine/common/check.h"
#include "engine/kernels/quantize.h"

namespace sparrow::testing {
namespace {

void PadTo(std::vector<uint8_t>& out, uint64_t alignment) {
  while (out.size() % alignment != 0) out.push_back(0);
}

}  // namespace

uint16_t FloatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t mag = x & 0x7fffffff;
  if (mag >= 0x7f800000) return sign | 0x7c00 | (mag > 0x7f800000 ? 0x200 : 0);  // inf, NaN
  if (mag >= 0x477ff000) return sign | 0x7c00;  // at or above the halfway point past 65504
  if (mag < 0x38800000) {
    // Subnormal half: count units of 2^-24; scaling by 2^24 is exact, rint rounds to even.
    const float units = std::nearbyint(std::bit_cast<float>(mag) * 16777216.0f);
    return sign | static_cast<uint16_t>(units);
  }
  uint32_t h = (((mag >> 23) - 112) << 10) | ((mag & 0x7fffff) >> 13);
  const uint32_t rest = mag & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry into the exponent is right
  return sign | static_cast<uint16_t>(h);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000 | (man << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t FloatToBf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

void ConvertRowBuiltin(TensorType type, const float* src, void* dst, int64_t n) {
  switch (type) {
    case TensorType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case TensorType::kF16:
    case TensorType::kBF16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) {
        out[i] = type == TensorType::kF16 ? FloatToHalf(src[i]) : FloatToBf16(src[i]);
      }
      return;
    }
    default:
      // Block types go through the engine's quantizers; the plain types above stay
      // independent of the engine so that tests of its F16/BF16 paths are not circular.
      if (!kernels::CanQuantize(type)) {
        std::fprintf(stderr, "ConvertRowBuiltin: no quantizer for %s; pass a QuantizeRowFn\n",
                     std::string(TensorTypeName(type)).c_str());
        std::abort();
      }
      kernels::QuantizeRow(type, src, dst, n);
  }
}

uint64_t RowBytes(TensorType type, uint64_t row_len) {
  const uint64_t dims[1] = {row_len};
  return GgufTensorBytes(type, dims);
}

std::vector<uint8_t> GgufImage::Prefix(size_t n) const {
  SPARROW_CHECK(n <= bytes.size());
  return std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
}

Status GgufImage::WriteFile(const std::string& path) const {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return IoError("cannot create " + path);
  const bool ok = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !ok) return IoError("cannot write " + path);
  return Status::Ok();
}

void GgufImage::PatchU32(size_t pos, uint32_t v) {
  SPARROW_CHECK(pos + 4 <= bytes.size());
  std::memcpy(bytes.data() + pos, &v, 4);
}

void GgufImage::PatchU64(size_t pos, uint64_t v) {
  SPARROW_CHECK(pos + 8 <= bytes.size());
  std::memcpy(bytes.data() + pos, &v, 8);
}

void GgufImage::SetMagic(std::string_view four_bytes) {
  SPARROW_CHECK(four_bytes.size() == 4 && bytes.size() >= 4);
  std::memcpy(bytes.data(), four_bytes.data(), 4);
}

GgufWriter& GgufWriter::AddTensor(std::string name, TensorType type, std::vector<uint64_t> dims,
                                  std::vector<uint8_t> data) {
  AddTensorInfo(name, type, std::move(dims), data.size());
  data_.push_back({std::move(name), std::move(data)});
  return *this;
}

GgufWriter& GgufWriter::AddTensorF32(std::string name, TensorType type, std::vector<uint64_t> dims,
                                     std::span<const float> values, const QuantizeRowFn& quantize) {
  SPARROW_CHECK(!dims.empty() && dims[0] > 0);
  const uint64_t row_len = dims[0];
  SPARROW_CHECK(values.size() % row_len == 0);
  const uint64_t row_bytes = RowBytes(type, row_len);
  if (row_bytes == 0) {
    std::fprintf(stderr, "AddTensorF32(%s): row length %llu does not fit type %s\n", name.c_str(),
                 static_cast<unsigned long long>(row_len),
                 std::string(TensorTypeName(type)).c_str());
    std::abort();
  }
  const uint64_t rows = values.size() / row_len;
  std::vector<uint8_t> data(rows * row_bytes);
  for (uint64_t r = 0; r < rows; ++r) {
    const float* src = values.data() + r * row_len;
    void* dst = data.data() + r * row_bytes;
    if (quantize) {
      quantize(type, src, dst, static_cast<int64_t>(row_len));
    } else {
      ConvertRowBuiltin(type, src, dst, static_cast<int64_t>(row_len));
    }
  }
  return AddTensor(std::move(name), type, std::move(dims), std::move(data));
}

GgufImage GgufWriter::Build() const {
  GgufImage img;
  img.bytes = Encode(&img.layout);
  std::vector<uint8_t>& out = img.bytes;
  img.layout.data_end = out.size();
  for (const TensorData& t : data_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    img.layout.data_end = out.size();
    PadTo(out, alignment());
  }
  // The padding is relative to the file start; data offsets are relative to data_start, and
  // data_start is a multiple of the alignment, so the two agree.
  return img;
}

bool GgufWriter::RemoveTensor(std::string_view name) {
  std::erase_if(data_, [&](const TensorData& t) { return t.name == name; });
  return GgufHeader::RemoveTensor(name);
}

}  // namespace sparrow::testing
