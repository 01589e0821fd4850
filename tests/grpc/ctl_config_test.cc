// sparrowctl's device list (ctl.yaml): devices with their files relative to the config, the
// default device, and errors that name the file and the field.
#include "clients/sparrowctl/ctl_config.h"

#include <gtest/gtest.h>

namespace sparrow::ctl {
namespace {

TEST(CtlConfigTest, ReadsDevicesWithFilesRelativeToTheConfig) {
  CtlConfig c;
  std::string error;
  ASSERT_TRUE(ParseCtlConfig(R"(
default: phone
devices:
  phone:
    host: 192.168.1.20
    port: 50052
    ca: phone.crt
    key_file: /etc/sparrow/admin.key
    timeout_ms: 3000
  board:
    host: "::1"
)",
                             "/home/op/.config/sparrow/ctl.yaml", &c, &error))
      << error;
  EXPECT_EQ(c.default_device, "phone");
  ASSERT_EQ(c.devices.size(), 2u);
  const DeviceEntry& p = c.devices.at("phone");
  EXPECT_EQ(p.host, "192.168.1.20");
  EXPECT_EQ(p.port, 50052);
  EXPECT_EQ(p.ca, "/home/op/.config/sparrow/phone.crt");
  EXPECT_EQ(p.key_file, "/etc/sparrow/admin.key");
  EXPECT_EQ(p.timeout_ms, 3000);
  EXPECT_EQ(c.devices.at("board").host, "::1");
  EXPECT_EQ(c.devices.at("board").port, 0);  // not set: sparrowctl's default
}

TEST(CtlConfigTest, AnEmptyFileIsNoDevices) {
  CtlConfig c;
  std::string error;
  ASSERT_TRUE(ParseCtlConfig("", "ctl.yaml", &c, &error)) << error;
  EXPECT_TRUE(c.devices.empty());
  // A missing file is fine unless it was asked for.
  EXPECT_TRUE(LoadCtlConfig("/nonexistent/ctl.yaml", false, &c, &error));
  EXPECT_FALSE(LoadCtlConfig("/nonexistent/ctl.yaml", true, &c, &error));
  EXPECT_NE(error.find("/nonexistent/ctl.yaml"), std::string::npos);
}

TEST(CtlConfigTest, MistakesNameTheFileAndTheField) {
  struct Case {
    const char* yaml;
    const char* says;
  };
  const Case cases[] = {
      {"devices: [a, b]", "'devices' must map"},
      {"devices:\n  phone:\n    port: 80", "'devices.phone.host' is missing"},
      {"devices:\n  phone:\n    host: h\n    port: 70000", "'devices.phone.port' must be"},
      {"devices:\n  phone:\n    host: h\n    port: ten", "got 'ten'"},
      {"devices:\n  phone:\n    host: h\n    colour: red", "unknown field 'devices.phone.colour'"},
      {"default: tablet\ndevices:\n  phone:\n    host: h", "'default' is 'tablet'"},
      {"hosts: {}", "unknown key 'hosts'"},
      {"devices: {phone: {host: [1, 2]}}", "must be a single value"},
      {"devices: {phone: {host: h}", "not valid YAML"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.yaml);
    CtlConfig c;
    std::string error;
    EXPECT_FALSE(ParseCtlConfig(k.yaml, "my/ctl.yaml", &c, &error));
    EXPECT_NE(error.find("my/ctl.yaml"), std::string::npos) << error;
    EXPECT_NE(error.find(k.says), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace sparrow::ctl
