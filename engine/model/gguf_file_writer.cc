#include "engine/model/gguf_file_writer.h"

#include <cerrno>
#include <cstring>

namespace sparrow {

GgufFileWriter::~GgufFileWriter() {
  if (file_) {
    std::fclose(file_);
    std::remove((path_ + ".partial").c_str());
  }
}

uint64_t GgufFileWriter::DeclareTensor(std::string_view name, TensorType type,
                                       std::vector<uint64_t> dims) {
  const uint64_t bytes = GgufTensorBytes(type, dims);
  if (bytes == 0) return 0;
  header_.AddTensorInfo(std::string(name), type, std::move(dims), bytes);
  return bytes;
}

uint64_t GgufFileWriter::data_bytes() const {
  const size_t n = header_.tensor_count();
  return n == 0 ? 0 : header_.tensor_offset(n - 1) + header_.tensor_bytes(n - 1);
}

Status GgufFileWriter::WriteRaw(const void* data, size_t n) {
  if (n > 0 && std::fwrite(data, 1, n, file_) != n) {
    return IoError(path_ + ".partial: write failed: " + std::strerror(errno));
  }
  written_ += n;
  return Status::Ok();
}

Status GgufFileWriter::PadTo(uint64_t alignment) {
  static const uint8_t kZeros[4096] = {};
  uint64_t pad = (alignment - written_ % alignment) % alignment;
  while (pad > 0) {
    const uint64_t take = std::min<uint64_t>(pad, sizeof kZeros);
    SPARROW_RETURN_IF_ERROR(WriteRaw(kZeros, take));
    pad -= take;
  }
  return Status::Ok();
}

Status GgufFileWriter::Begin(const std::string& path) {
  if (file_) return Internal(path + ": writer already started");
  path_ = path;
  file_ = std::fopen((path + ".partial").c_str(), "wb");
  if (!file_) return IoError(path + ".partial: cannot create: " + std::strerror(errno));
  buffer_.resize(8 << 20);  // few large writes instead of many small ones
  std::setvbuf(file_, buffer_.data(), _IOFBF, buffer_.size());
  GgufLayout layout;
  const std::vector<uint8_t> head = header_.Encode(&layout);
  SPARROW_RETURN_IF_ERROR(WriteRaw(head.data(), head.size()));
  data_start_ = written_;
  offsets_.clear();
  for (const GgufLayout::Tensor& t : layout.tensors) offsets_.push_back(t.data_offset);
  current_ = 0;
  current_written_ = 0;
  return Status::Ok();
}

void GgufFileWriter::SkipCompleteTensors() {
  while (current_ < offsets_.size() && current_written_ == header_.tensor_bytes(current_)) {
    ++current_;
    current_written_ = 0;
  }
}

Status GgufFileWriter::Append(const void* data, size_t n) {
  if (!file_) return Internal(path_ + ": Append before Begin");
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    SkipCompleteTensors();
    if (current_ == offsets_.size()) {
      return Internal(path_ + ": more tensor data written than declared");
    }
    if (current_written_ == 0) SPARROW_RETURN_IF_ERROR(PadTo(header_.alignment()));
    if (written_ - data_start_ != offsets_[current_] + current_written_) {
      return Internal(path_ + ": tensor '" + header_.tensor_name(current_) + "' is misplaced");
    }
    const uint64_t take = std::min<uint64_t>(n, header_.tensor_bytes(current_) - current_written_);
    SPARROW_RETURN_IF_ERROR(WriteRaw(p, take));
    current_written_ += take;
    p += take;
    n -= take;
  }
  return Status::Ok();
}

Status GgufFileWriter::Finish() {
  if (!file_) return Internal(path_ + ": Finish before Begin");
  SkipCompleteTensors();
  if (current_ != offsets_.size()) {
    return Internal(path_ + ": tensor '" + header_.tensor_name(current_) + "' is incomplete");
  }
  // The file ends on the alignment too, so aligned (O_DIRECT) reads of its last tensor stay
  // inside it.
  SPARROW_RETURN_IF_ERROR(PadTo(header_.alignment()));
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) {
    std::remove((path_ + ".partial").c_str());
    return IoError(path_ + ".partial: close failed: " + std::strerror(errno));
  }
  if (std::rename((path_ + ".partial").c_str(), path_.c_str()) != 0) {
    std::remove((path_ + ".partial").c_str());
    return IoError(path_ + ": cannot rename from .partial: " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace sparrow
