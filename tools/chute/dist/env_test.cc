#include "chute/dist/env.h"

#include <gtest/gtest.h>

#include <map>

#include "chute/util/error.h"

namespace chute::dist {
namespace {

RankInfo detect(const std::map<std::string, std::string>& env) {
  return detect_rank_from_env([&](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

ErrorCode code_of(const std::map<std::string, std::string>& env, std::string* message) {
  try {
    detect(env);
  } catch (const Error& error) {
    *message = error.what();
    return error.code();
  }
  ADD_FAILURE() << "expected an error";
  return ErrorCode::kInternal;
}

TEST(DistEnv, NothingSetMeansRankZeroOfOne) {
  RankInfo info = detect({});
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.source, "default");
}

TEST(DistEnv, EachLauncherIsRecognised) {
  struct Case {
    std::map<std::string, std::string> env;
    int rank, size, local;
    std::string source_prefix;
  };
  std::vector<Case> cases = {
      {{{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}}, 3, 8, 1, "torchrun"},
      {{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}}, 1, 2, 0, "Open MPI"},
      {{{"PMI_RANK", "4"}, {"PMI_SIZE", "5"}, {"MPI_LOCALRANKID", "0"}}, 4, 5, 0, "PMI"},
      {{{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "2"}}, 2, 4, 2, "Slurm"},
  };
  for (const Case& c : cases) {
    RankInfo info = detect(c.env);
    EXPECT_EQ(info.rank, c.rank) << c.source_prefix;
    EXPECT_EQ(info.world_size, c.size) << c.source_prefix;
    EXPECT_EQ(info.local_rank, c.local) << c.source_prefix;
    EXPECT_EQ(info.source.rfind(c.source_prefix, 0), 0u) << info.source;
  }
}

TEST(DistEnv, PrecedenceTorchrunThenMpiThenPmiThenSlurm) {
  // mpirun inside an sbatch script: every rank inherits SLURM_PROCID=0; OMPI_ wins.
  RankInfo info = detect({{"SLURM_PROCID", "0"},
                          {"SLURM_NTASKS", "1"},
                          {"OMPI_COMM_WORLD_RANK", "1"},
                          {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 2);
  info =
      detect({{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 3);
  info = detect({{"RANK", "5"},
                 {"WORLD_SIZE", "6"},
                 {"OMPI_COMM_WORLD_RANK", "0"},
                 {"OMPI_COMM_WORLD_SIZE", "2"},
                 {"PMI_RANK", "0"},
                 {"PMI_SIZE", "2"}});
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.world_size, 6);
}

TEST(DistEnv, InvalidValuesNameTheVariables) {
  std::string message;
  EXPECT_EQ(code_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("RANK=2"), std::string::npos) << message;
  EXPECT_NE(message.find("WORLD_SIZE=2"), std::string::npos) << message;

  EXPECT_EQ(code_of({{"SLURM_PROCID", "-1"}, {"SLURM_NTASKS", "4"}}, &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("SLURM_PROCID"), std::string::npos) << message;

  EXPECT_EQ(code_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "0"}}, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("PMI_SIZE"), std::string::npos) << message;

  EXPECT_EQ(code_of({{"OMPI_COMM_WORLD_RANK", "one"}, {"OMPI_COMM_WORLD_SIZE", "2"}}, &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("OMPI_COMM_WORLD_RANK=\"one\""), std::string::npos) << message;

  EXPECT_EQ(code_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "7"}}, &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("LOCAL_RANK"), std::string::npos) << message;
}

TEST(DistEnv, HalfAPairIsAnError) {
  std::string message;
  EXPECT_EQ(code_of({{"WORLD_SIZE", "4"}}, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("WORLD_SIZE is set but RANK is not"), std::string::npos) << message;
  EXPECT_EQ(code_of({{"SLURM_PROCID", "1"}}, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("SLURM_NTASKS"), std::string::npos) << message;
}

TEST(DistEnv, ValidateRank) {
  EXPECT_NO_THROW(validate_rank(0, 1, "test"));
  EXPECT_NO_THROW(validate_rank(2, 3, "test"));
  EXPECT_THROW(validate_rank(3, 3, "test"), Error);
  EXPECT_THROW(validate_rank(-1, 3, "test"), Error);
  EXPECT_THROW(validate_rank(0, 0, "test"), Error);
  try {
    validate_rank(4, 2, "Loader options rank/world_size");
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find("Loader options rank/world_size"), std::string::npos);
  }
}

}  // namespace
}  // namespace chute::dist
