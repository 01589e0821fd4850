// SIGTERM to a real sparrowd child with gRPC streams running and queued: within
// shutdown_timeout_ms every stream ends with a last message saying FINISH_REASON_CANCELLED and
// status OK, and the process exits 0. (Before: gRPC's Shutdown ran first and waited for calls
// that were still in the scheduler's queue; they ended CANCELLED, or only after the queue ran.)
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "sparrow/v1/sparrow.grpc.pb.h"
#include "tests/util/sparrowd_process.h"
#include "tests/util/test_paths.h"

namespace sparrow {
namespace {

using testing::SparrowdProcess;

struct StreamEnd {
  grpc::Status status;
  v1::GenerateResponse last;
  int messages = 0;
};

TEST(SparrowdShutdownTest, SigtermEndsRunningAndQueuedGrpcStreamsCleanly) {
  SparrowdProcess::Options o;
  o.args = {"--model",
            testing::ModelPath("stories260K.gguf"),
            "--port",
            "0",
            "--grpc-port",
            "0",
            "--threads",
            "1",
            "--max-running",
            "1",
            "--shutdown-timeout-ms",
            "300"};
  std::string error;
  auto p = SparrowdProcess::Start(SparrowdProcess::Binary(SPARROWD), o, &error);
  ASSERT_NE(p, nullptr) << error;
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(p->grpc_port()),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::Sparrow::NewStub(channel);

  // Two long generations: one runs, the other waits in the queue (max_running 1).
  v1::GenerateRequest req;
  req.set_prompt("Once upon a time");
  req.mutable_options()->set_max_tokens(2000);
  StreamEnd ends[2];
  grpc::ClientContext contexts[2];
  std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> readers[2];
  readers[0] = stub->Generate(&contexts[0], req);
  v1::GenerateResponse first;
  ASSERT_TRUE(readers[0]->Read(&first));  // the first one is generating
  ends[0].messages = 1;
  readers[1] = stub->Generate(&contexts[1], req);
  bool queued = false;
  for (int i = 0; i < 2000 && !queued; ++i) {
    const std::string metrics =
        testing::RawExchange("127.0.0.1", p->http_port(),
                             "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    queued = metrics.find("\nsparrow_queue_depth 1\n") != std::string::npos;
  }
  ASSERT_TRUE(queued) << "the second call never reached the queue";
  p->Signal(SIGTERM);
  std::thread other([&] {
    v1::GenerateResponse m;
    while (readers[1]->Read(&m)) {
      ends[1].last = m;
      ++ends[1].messages;
    }
    ends[1].status = readers[1]->Finish();
  });
  v1::GenerateResponse m;
  while (readers[0]->Read(&m)) {
    ends[0].last = m;
    ++ends[0].messages;
  }
  ends[0].status = readers[0]->Finish();
  other.join();
  EXPECT_EQ(p->Wait(std::chrono::seconds(60)), 0);

  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i == 0 ? "running" : "queued");
    EXPECT_TRUE(ends[i].status.ok()) << ends[i].status.error_message();
    EXPECT_EQ(ends[i].last.finish_reason(), v1::FINISH_REASON_CANCELLED);
    EXPECT_LT(ends[i].last.usage().completion_tokens(), 2000);
  }
  const std::string log = p->Stdout();
  EXPECT_NE(log.find("stopped"), std::string::npos) << log;
  if (HasFailure()) ADD_FAILURE() << log;
}

}  // namespace
}  // namespace sparrow
