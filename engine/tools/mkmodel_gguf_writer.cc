#include "engine/tools/mkmodel_gguf_writer.h"

#include <bit>
#include <cerrno>
#include <cstring>

namespace sparrow::tools {
namespace {

constexpr uint64_t kAlignment = 32;

template <typename T>
void Put(std::vector<uint8_t>& out, T v) {
  static_assert(std::endian::native == std::endian::little);
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}

void PutString(std::vector<uint8_t>& out, std::string_view s) {
  Put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

size_t ScalarSize(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16:
      return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32:
      return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64:
      return 8;
    default:
      return 0;
  }
}

// Re-encodes a widened scalar in its original width.
Status PutScalar(std::vector<uint8_t>& out, const GgufValue& v, std::string_view key) {
  const size_t size = ScalarSize(v.type);
  uint8_t b[8] = {};
  if (v.type == GgufValueType::kF32) {
    const float f = static_cast<float>(std::get<double>(v.v));
    std::memcpy(b, &f, 4);
  } else if (v.type == GgufValueType::kF64) {
    const double d = std::get<double>(v.v);
    std::memcpy(b, &d, 8);
  } else if (v.type == GgufValueType::kBool) {
    b[0] = std::get<bool>(v.v) ? 1 : 0;
  } else if (auto* u = std::get_if<uint64_t>(&v.v)) {
    std::memcpy(b, u, 8);  // little-endian: the low bytes come first
  } else if (auto* i = std::get_if<int64_t>(&v.v)) {
    std::memcpy(b, i, 8);
  } else {
    return Unsupported("metadata key '" + std::string(key) + "' has a value that cannot be copied");
  }
  out.insert(out.end(), b, b + size);
  return Status::Ok();
}

}  // namespace

GgufStreamWriter::~GgufStreamWriter() {
  if (file_) {
    std::fclose(file_);
    std::remove((path_ + ".partial").c_str());
  }
}

void GgufStreamWriter::AddString(std::string_view key, std::string_view value) {
  PutString(kv_bytes_, key);
  Put<uint32_t>(kv_bytes_, static_cast<uint32_t>(GgufValueType::kString));
  PutString(kv_bytes_, value);
  ++kv_count_;
}

void GgufStreamWriter::AddU32(std::string_view key, uint32_t value) {
  PutString(kv_bytes_, key);
  Put<uint32_t>(kv_bytes_, static_cast<uint32_t>(GgufValueType::kU32));
  Put<uint32_t>(kv_bytes_, value);
  ++kv_count_;
}

void GgufStreamWriter::AddF32(std::string_view key, float value) {
  PutString(kv_bytes_, key);
  Put<uint32_t>(kv_bytes_, static_cast<uint32_t>(GgufValueType::kF32));
  Put<float>(kv_bytes_, value);
  ++kv_count_;
}

Status GgufStreamWriter::AddCopy(std::string_view key, const GgufValue& value) {
  std::vector<uint8_t> enc;
  PutString(enc, key);
  Put<uint32_t>(enc, static_cast<uint32_t>(value.type));
  if (value.type == GgufValueType::kString) {
    PutString(enc, std::get<std::string_view>(value.v));
  } else if (value.type == GgufValueType::kArray) {
    const GgufArray& a = std::get<GgufArray>(value.v);
    Put<uint32_t>(enc, static_cast<uint32_t>(a.elem_type));
    Put<uint64_t>(enc, a.size);
    if (a.elem_type == GgufValueType::kString) {
      for (std::string_view s : a.strings) PutString(enc, s);
    } else if (size_t elem = ScalarSize(a.elem_type); elem > 0) {
      enc.insert(enc.end(), a.data, a.data + a.size * elem);
    } else {
      return Unsupported("metadata key '" + std::string(key) + "' is a nested array");
    }
  } else {
    SPARROW_RETURN_IF_ERROR(PutScalar(enc, value, key));
  }
  kv_bytes_.insert(kv_bytes_.end(), enc.begin(), enc.end());
  ++kv_count_;
  return Status::Ok();
}

uint64_t GgufStreamWriter::DeclareTensor(std::string_view name, TensorType type,
                                         std::vector<uint64_t> dims) {
  const auto traits = GetTensorTypeTraits(type);
  if (!traits || dims.empty() || dims[0] % traits->block_elems != 0) return 0;
  uint64_t rows = 1;
  for (size_t i = 1; i < dims.size(); ++i) rows *= dims[i];
  TensorEntry t{std::string(name), type, std::move(dims), 0, 0};
  t.bytes = rows * (t.dims[0] / traits->block_elems) * traits->block_bytes;
  data_size_ = (data_size_ + kAlignment - 1) / kAlignment * kAlignment;
  t.offset = data_size_;
  data_size_ += t.bytes;
  tensors_.push_back(std::move(t));
  return tensors_.back().bytes;
}

Status GgufStreamWriter::WriteRaw(const void* data, size_t n) {
  if (n > 0 && std::fwrite(data, 1, n, file_) != n) {
    return IoError(path_ + ".partial: write failed: " + std::strerror(errno));
  }
  written_ += n;
  return Status::Ok();
}

Status GgufStreamWriter::PadTo(uint64_t alignment) {
  static const uint8_t kZeros[64] = {};
  const uint64_t pad = (alignment - written_ % alignment) % alignment;
  return WriteRaw(kZeros, pad);
}

Status GgufStreamWriter::Begin(const std::string& path) {
  if (file_) return Internal(path + ": writer already started");
  path_ = path;
  file_ = std::fopen((path + ".partial").c_str(), "wb");
  if (!file_) return IoError(path + ".partial: cannot create: " + std::strerror(errno));
  buffer_.resize(8 << 20);  // few large writes instead of many small ones
  std::setvbuf(file_, buffer_.data(), _IOFBF, buffer_.size());
  std::vector<uint8_t> head;
  head.reserve(64 + kv_bytes_.size() + tensors_.size() * 96);
  const std::string_view magic = pwri_magic_ ? "PWRI" : "GGUF";
  head.insert(head.end(), magic.begin(), magic.end());
  Put<uint32_t>(head, 3);
  Put<uint64_t>(head, tensors_.size());
  Put<uint64_t>(head, kv_count_);
  head.insert(head.end(), kv_bytes_.begin(), kv_bytes_.end());
  for (const TensorEntry& t : tensors_) {
    PutString(head, t.name);
    Put<uint32_t>(head, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) Put<uint64_t>(head, d);
    Put<uint32_t>(head, static_cast<uint32_t>(t.type));
    Put<uint64_t>(head, t.offset);
  }
  SPARROW_RETURN_IF_ERROR(WriteRaw(head.data(), head.size()));
  SPARROW_RETURN_IF_ERROR(PadTo(kAlignment));
  data_start_ = written_;
  current_ = 0;
  current_written_ = 0;
  return Status::Ok();
}

Status GgufStreamWriter::Append(const void* data, size_t n) {
  if (!file_) return Internal(path_ + ": Append before Begin");
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    while (current_ < tensors_.size() && current_written_ == tensors_[current_].bytes) {
      ++current_;
      current_written_ = 0;
    }
    if (current_ == tensors_.size()) {
      return Internal(path_ + ": more tensor data written than declared");
    }
    const TensorEntry& t = tensors_[current_];
    if (current_written_ == 0) SPARROW_RETURN_IF_ERROR(PadTo(kAlignment));
    if (written_ - data_start_ != t.offset + current_written_) {
      return Internal(path_ + ": tensor '" + t.name + "' is misplaced");
    }
    const uint64_t take = std::min<uint64_t>(n, t.bytes - current_written_);
    SPARROW_RETURN_IF_ERROR(WriteRaw(p, take));
    current_written_ += take;
    p += take;
    n -= take;
  }
  return Status::Ok();
}

Status GgufStreamWriter::Finish() {
  if (!file_) return Internal(path_ + ": Finish before Begin");
  while (current_ < tensors_.size() && current_written_ == tensors_[current_].bytes) {
    ++current_;
    current_written_ = 0;
  }
  if (current_ != tensors_.size()) {
    return Internal(path_ + ": tensor '" + tensors_[current_].name + "' is incomplete");
  }
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) {
    std::remove((path_ + ".partial").c_str());
    return IoError(path_ + ".partial: close failed: " + std::strerror(errno));
  }
  if (std::rename((path_ + ".partial").c_str(), path_.c_str()) != 0) {
    return IoError(path_ + ": cannot rename from .partial: " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace sparrow::tools
