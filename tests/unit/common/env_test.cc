// Env::ReadSmallFile: the one way the engine reads a small file whole (kernel files, profiles).
#include "engine/common/env.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace sparrow {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/env_test_" + std::to_string(getpid()) + "_" + name;
}

TEST(EnvTest, ReadSmallFileReadsTheWholeFile) {
  const std::string path = TempPath("whole");
  std::string text(40000, 'x');  // longer than one read
  text += "end";
  std::ofstream(path, std::ios::binary) << text;
  Result<std::string> got = Env::Default()->ReadSmallFile(path);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, text);
  std::remove(path.c_str());
}

TEST(EnvTest, ReadSmallFileReadsProcFilesThatSaySizeZero) {
  Result<std::string> got = Env::Default()->ReadSmallFile("/proc/self/status");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_NE(got->find("RssAnon:"), std::string::npos);
}

TEST(EnvTest, ReadSmallFileNamesTheFileItCannotRead) {
  const std::string missing = TempPath("missing");
  Result<std::string> got = Env::Default()->ReadSmallFile(missing);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_NE(got.status().message().find(missing), std::string::npos);
  EXPECT_EQ(ReadSmallFileOrEmpty(missing), "");
}

TEST(EnvTest, ReadSmallFileRefusesAFileOverItsLimit) {
  const std::string path = TempPath("long");
  std::ofstream(path, std::ios::binary) << std::string(5000, 'y');
  Result<std::string> got = Env::Default()->ReadSmallFile(path, 4096);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(got.status().message().find("4096"), std::string::npos);
  EXPECT_TRUE(Env::Default()->ReadSmallFile(path, 5000).ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sparrow
