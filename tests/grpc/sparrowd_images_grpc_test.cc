// Images in gRPC Chat on the real sparrowd (stories260K, no vision encoder): ChatMessage.images
// reach the same decoding as HTTP's image_url parts, each bad one INVALID_ARGUMENT naming it,
// a good one refused as a model without an encoder.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "sparrow/v1/sparrow.grpc.pb.h"
#include "tests/util/image_files.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::SparrowdProcess;

grpc::Status Chat(const SparrowdProcess& s, const std::vector<std::string>& images) {
  v1::ChatRequest req;
  v1::ChatMessage* m = req.add_messages();
  m->set_role("user");
  m->set_content("What is this?");
  for (const std::string& data : images) {
    v1::ChatImage* image = m->add_images();
    image->set_data(data);
    image->set_offset(static_cast<uint32_t>(m->content().size()));
  }
  req.mutable_options()->set_max_tokens(2);
  auto stub = v1::Sparrow::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(s.grpc_port()),
                                                       grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  auto reader = stub->Chat(&ctx, req);
  v1::GenerateResponse r;
  while (reader->Read(&r)) {
  }
  return reader->Finish();
}

TEST(SparrowdImagesGrpcTest, ImagesAreDecodedAndRefusedAsOverHttp) {
  SparrowdProcess::Options o;
  o.args = {"--model",     testing::ModelPath("stories260K.gguf"),
            "--port",      "0",
            "--threads",   "1",
            "--grpc-port", "0"};
  std::string error;
  auto s = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(s, nullptr) << error;
  testing::PngSpec spec;
  spec.width = 3;
  spec.height = 2;
  spec.samples.assign(3 * 2 * 3, 90);
  const std::string png = testing::EncodePng(spec);

  grpc::Status good = Chat(*s, {png});
  EXPECT_EQ(good.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(good.error_message().find("does not take images"), std::string::npos)
      << good.error_message();
  EXPECT_NE(good.error_message().find("--mmproj"), std::string::npos);

  grpc::Status cut = Chat(*s, {png, png.substr(0, 50)});
  EXPECT_EQ(cut.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(cut.error_message().find("'messages[0].images[1]': the PNG is truncated or corrupt"),
            std::string::npos)
      << cut.error_message();
  grpc::Status gif = Chat(*s, {"GIF89a"});
  EXPECT_NE(gif.error_message().find("'messages[0].images[0]': the data is a GIF image"),
            std::string::npos)
      << gif.error_message();
  EXPECT_TRUE(Chat(*s, {}).ok());  // text chats are served all along
}

}  // namespace
}  // namespace sparrow
