#include "engine/model/gguf_file_writer.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::FileExists;
using testing::TempPath;

TEST(GgufFileWriter, WritesAFileTheReaderAccepts) {
  const std::string path = TempPath("stream.gguf");
  GgufFileWriter w;
  w.header().AddString("general.architecture", "llama");
  w.header().AddU32("x.count", 7);
  w.header().AddF32("x.eps", 0.5f);
  EXPECT_EQ(w.DeclareTensor("a", TensorType::kF32, {3}), 12u);
  EXPECT_EQ(w.DeclareTensor("b", TensorType::kQ8_0, {32, 2}), 68u);
  ASSERT_TRUE(w.Begin(path).ok());
  const std::vector<float> a = {1, 2, 3};
  ASSERT_TRUE(w.Append(a.data(), 12).ok());
  const std::vector<uint8_t> b(68, 0x11);
  ASSERT_TRUE(w.Append(b.data(), 30).ok());  // split appends land in order
  ASSERT_TRUE(w.Append(b.data() + 30, 38).ok());
  ASSERT_TRUE(w.Finish().ok());

  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->GetUInt("x.count").value(), 7u);
  EXPECT_EQ((*f)->GetFloat("x.eps").value(), 0.5);
  const GgufTensorInfo* ta = (*f)->FindTensor("a");
  const GgufTensorInfo* tb = (*f)->FindTensor("b");
  ASSERT_TRUE(ta && tb);
  EXPECT_EQ(reinterpret_cast<const float*>(ta->data)[2], 3.0f);
  EXPECT_EQ(tb->data[67], 0x11);
  EXPECT_EQ(tb->offset % 32, 0u);

  // Copying metadata from a file reproduces it.
  GgufFileWriter copy;
  for (const auto& [key, value] : (*f)->metadata())
    ASSERT_TRUE(copy.header().AddCopy(key, value).ok());
  const std::string path2 = TempPath("copy.gguf");
  ASSERT_TRUE(copy.Begin(path2).ok());
  ASSERT_TRUE(copy.Finish().ok());
  auto g = GgufFile::Open(path2);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ((*g)->GetString("general.architecture").value(), "llama");
  EXPECT_EQ((*g)->GetUInt("x.count").value(), 7u);
}

TEST(GgufFileWriter, RejectsTooMuchOrTooLittleData) {
  const std::string path = TempPath("bad.gguf");
  {
    GgufFileWriter w;
    EXPECT_EQ(w.DeclareTensor("q", TensorType::kQ4_0, {30}), 0u);  // not a whole block
    w.DeclareTensor("t", TensorType::kF32, {2});
    ASSERT_TRUE(w.Begin(path).ok());
    const float x[3] = {1, 2, 3};
    EXPECT_FALSE(w.Append(x, sizeof x).ok());
  }
  GgufFileWriter w;
  w.DeclareTensor("t", TensorType::kF32, {2});
  ASSERT_TRUE(w.Begin(path).ok());
  const float x = 1;
  ASSERT_TRUE(w.Append(&x, sizeof x).ok());
  EXPECT_FALSE(w.Finish().ok());
  EXPECT_FALSE(FileExists(path));
}

}  // namespace
}  // namespace sparrow
