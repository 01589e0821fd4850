// The sizes `sparrowctl budget set` takes: units as powers of 1024, fractions, and clear errors.
#include "clients/sparrowctl/byte_size.h"

#include <gtest/gtest.h>

namespace sparrow::ctl {
namespace {

TEST(ByteSizeTest, UnitsArePowersOf1024) {
  const std::pair<const char*, uint64_t> cases[] = {{"65536", 65536},
                                                    {"512B", 512},
                                                    {"4k", 4096},
                                                    {"800M", 800ull << 20},
                                                    {"800MiB", 800ull << 20},
                                                    {"800mb", 800ull << 20},
                                                    {"1.5G", 3ull << 29},
                                                    {"2GB", 2ull << 30},
                                                    {"1T", 1ull << 40},
                                                    {"0.5K", 512}};
  for (const auto& [text, want] : cases) {
    uint64_t got = 0;
    std::string error;
    EXPECT_TRUE(ParseByteSize(text, &got, &error)) << text << ": " << error;
    EXPECT_EQ(got, want) << text;
  }
}

TEST(ByteSizeTest, AnythingElseIsRefusedNamingTheText) {
  for (const char* text : {"", "lots", "-5", "5X", "1.2.3G", "G", "1e3", "99999999999T", "5 M"}) {
    uint64_t got = 7;
    std::string error;
    EXPECT_FALSE(ParseByteSize(text, &got, &error)) << text;
    EXPECT_EQ(got, 7u) << text;
    EXPECT_NE(error.find(std::string("'") + text + "'"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace sparrow::ctl
