#include "chute/bench/report.h"

#include <gtest/gtest.h>

#include <cmath>

#include "chute/bench/table.h"

namespace chute::bench {
namespace {

ModeResult fake_mode(Mode mode, double samples_per_s, double gb_per_s) {
  ModeResult r;
  r.mode = mode;
  r.setting = {2, 2, 16};
  r.trials = 3;
  r.batches_per_trial = 10;
  const std::vector<double> rates = {samples_per_s * 0.9, samples_per_s, samples_per_s * 1.1};
  const std::vector<double> gbps = {gb_per_s, gb_per_s, gb_per_s};
  const std::vector<double> spb = {16 / rates[0], 16 / rates[1], 16 / rates[2]};
  r.samples_per_s = summarize(rates);
  r.gb_per_s = summarize(gbps);
  r.s_per_batch = summarize(spb);
  r.time_to_first_batch_s = 0.25;
  r.queue = {{0.0, 2}, {0.1, 1}, {0.2, 0}};
  r.queue_capacity = 2;
  return r;
}

nlohmann::json sample_report() {
  MachineInfo machine;
  machine.cpu_model = "test cpu";
  nlohmann::json dataset = {{"path", "/data/packed"},
                            {"workload", "packed"},
                            {"description", "packed: inputs, targets"},
                            {"samples", 100},
                            {"sample_bytes", 1000},
                            {"stored_bytes", 50000},
                            {"fits_in_ram", true},
                            {"arrays", nlohmann::json::array()}};
  nlohmann::json settings = {{"threads", 2},
                             {"prefetch", 2},
                             {"batch_size", 16},
                             {"shuffle", true},
                             {"seed", 0},
                             {"drop_last", false},
                             {"rank", 0},
                             {"world_size", 1},
                             {"warmup", 2},
                             {"trials", 3},
                             {"batches", 10},
                             {"step_ms", 5.0},
                             {"modes", {"io", "full"}}};
  return make_report(machine, dataset, settings, "chute bench /data/packed");
}

TEST(BenchReport, SkeletonHasEveryTopLevelKey) {
  const auto report = sample_report();
  EXPECT_TRUE(missing_report_keys(report).empty());
  EXPECT_EQ(report["schema"], kReportSchema);
  EXPECT_TRUE(report["roofline"].is_null());
  EXPECT_TRUE(report["modes"].is_object());
  EXPECT_TRUE(report["peers"].is_array());
  EXPECT_TRUE(report["sweeps"].is_array());
}

TEST(BenchReport, MissingKeysAreNamed) {
  auto report = sample_report();
  report["machine"].erase("cpu_model");
  report["modes"]["io"] = {{"mode", "io"}};
  const auto missing = missing_report_keys(report);
  EXPECT_NE(std::find(missing.begin(), missing.end(), "machine.cpu_model"), missing.end());
  EXPECT_NE(std::find(missing.begin(), missing.end(), "modes.io.samples_per_s"), missing.end());
  report.erase("peers");
  EXPECT_EQ(missing_report_keys(report), std::vector<std::string>{"report.peers"});
}

TEST(BenchReport, PercentOfRooflineFollowsTheCombinedLimit) {
  auto report = sample_report();
  add_mode(report, fake_mode(Mode::kIo, 200, 0.5));
  EXPECT_TRUE(report["modes"]["io"]["percent_of_roofline"].is_null());
  RooflineResult roofline;
  roofline.read_gbps = 2;
  roofline.decode_gbps = 2;
  roofline.combined_gbps = combined_limit({2, 2});
  EXPECT_DOUBLE_EQ(roofline.combined_gbps, 1.0);
  EXPECT_DOUBLE_EQ(combined_limit({2, 2, 2}), 2.0 / 3.0);  // placement is a third step per chunk
  EXPECT_DOUBLE_EQ(combined_limit({2, 2, 0}), 0.0);        // a probe that measured nothing
  set_roofline(report, roofline);
  EXPECT_DOUBLE_EQ(report["modes"]["io"]["percent_of_roofline"].get<double>(), 0.5);
  add_mode(report, fake_mode(Mode::kFull, 100, 0.25));
  EXPECT_DOUBLE_EQ(report["modes"]["full"]["percent_of_roofline"].get<double>(), 0.25);
  EXPECT_TRUE(missing_report_keys(report).empty());
}

TEST(BenchReport, WindowsCountTheirDecodedBytesAgainstTheRoofline) {
  // A bfloat16 window of 1000 output bytes holds 2000 decoded bytes (float32 planes): the
  // roofline charges those, so the same samples/s is the same share whatever the output dtype.
  auto report = sample_report();
  report["dataset"]["workload"] = "variables";
  report["dataset"]["roofline_bytes_per_sample"] = 2000;
  RooflineResult roofline;
  roofline.combined_gbps = 1.0;
  set_roofline(report, roofline);
  add_mode(report, fake_mode(Mode::kIo, 200e3, 0.2));  // 200e3 samples/s × 1000 output bytes
  EXPECT_DOUBLE_EQ(report["modes"]["io"]["percent_of_roofline"].get<double>(), 0.4);
  report["dataset"].erase("roofline_bytes_per_sample");  // other datasets: output bytes
  set_roofline(report, roofline);
  EXPECT_DOUBLE_EQ(report["modes"]["io"]["percent_of_roofline"].get<double>(), 0.2);
}

TEST(BenchReport, MappedRooflineIsTheCopyWithNoDecodeStep) {
  auto report = sample_report();
  RooflineResult roofline;
  roofline.mapped = true;
  roofline.chunks = 12;
  roofline.read_gbps = roofline.combined_gbps = 4.0;
  roofline.read_source = "page cache (memory bandwidth)";
  roofline.bounding_step = bounding_step(roofline);
  set_roofline(report, roofline);
  add_mode(report, fake_mode(Mode::kIo, 200, 2.0));
  EXPECT_DOUBLE_EQ(report["modes"]["io"]["percent_of_roofline"].get<double>(), 0.5);
  const std::string text = render_report(report);
  EXPECT_NE(text.find("Roofline on the same 12 boxes"), std::string::npos) << text;
  EXPECT_NE(text.find("copy of the same boxes out of the file mappings"), std::string::npos);
  EXPECT_NE(text.find("none: mapped, uncompressed"), std::string::npos);
  EXPECT_EQ(text.find("decode, 1 thread"), std::string::npos);
  EXPECT_EQ(report["roofline"]["bounding_step"], "read");
}

TEST(BenchReport, SweepJsonHasSpeedupFitAndRecommendation) {
  SweepSpec spec;
  spec.threads = {1, 2, 4};
  std::vector<SweepPoint> points = {{{1, 2, 16}, 100, 1, 0.1, 0.16},
                                    {{2, 2, 16}, 190, 1, 0.19, 0.084},
                                    {{4, 2, 16}, 195, 1, 0.195, 0.082}};
  const auto sweep = sweep_to_json(spec, points, {1.0, 2.0, 0});
  ASSERT_EQ(sweep["points"].size(), 3u);
  EXPECT_DOUBLE_EQ(sweep["points"][1]["speedup"].get<double>(), 1.9);
  EXPECT_DOUBLE_EQ(sweep["points"][1]["efficiency"].get<double>(), 0.95);
  EXPECT_DOUBLE_EQ(sweep["points"][1]["percent_of_roofline"].get<double>(), 0.095);
  EXPECT_TRUE(sweep["points"][2]["percent_of_roofline"].is_null());
  ASSERT_TRUE(sweep["amdahl"].is_object());
  EXPECT_GT(sweep["amdahl"]["serial_fraction"].get<double>(), 0);
  EXPECT_EQ(sweep["recommended"]["threads"], 2);
  EXPECT_EQ(sweep["axes"]["threads"], (std::vector<int>{1, 2, 4}));
}

TEST(BenchReport, RendersEverySection) {
  auto report = sample_report();
  ModeResult io = fake_mode(Mode::kIo, 200, 0.5);
  io.cache = CacheStats{4321, 17, 2'000'000, 30'000, 30'000, 0, 1};
  add_mode(report, io);
  add_mode(report, fake_mode(Mode::kFull, 150, 0.4));
  RooflineResult roofline;
  roofline.combined_gbps = 1;
  roofline.read_source = "page cache (memory bandwidth)";
  set_roofline(report, roofline);
  report["peers"] = nlohmann::json::array(
      {{{"name", "zarr"},
        {"status", "ok"},
        {"note", ""},
        {"method", "one call per sample"},
        {"samples_per_s", {{"mean", 50.0}, {"std", 1.0}}},
        {"gb_per_s", {{"mean", 0.05}, {"std", 0.0}}},
        {"s_per_batch", {{"mean", 0.32}, {"std", 0.01}}},
        {"time_to_first_batch_s", 0.5},
        {"ratio_samples_per_s", 4.0}},
       {{"name", "torch"}, {"status", "skipped"}, {"note", "torch is not installed"}}});
  SweepSpec spec;
  spec.threads = {1, 2};
  report["sweeps"].push_back(
      sweep_to_json(spec, {{{1, 2, 16}, 100, 1, 0.1, 0.16}, {{2, 2, 16}, 180, 1, 0.18, 0.09}}, {}));
  const std::string text = render_report(report);
  for (const char* expected :
       {"Roofline", "page cache (memory bandwidth)", "Modes", "io", "full", "Time per batch",
        "Prefetch queue", "Peers", "zarr", "4.00×", "torch is not installed", "Sweep", "Amdahl fit",
        "Recommended: --threads 2", "50.0%", "Node-local cache", "4321"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
}

TEST(BenchReport, AnIoConcurrencySweepShowsItsReadsInFlight) {
  SweepSpec spec;
  spec.io_concurrency = {4, 64};
  auto report = sample_report();
  report["sweeps"].push_back(sweep_to_json(
      spec, {{{2, 2, 16, 4}, 50, 1, 0.05, 0.3}, {{2, 2, 16, 64}, 200, 1, 0.2, 0.08}}, {}));
  EXPECT_EQ(report["sweeps"][0]["axes"]["io_concurrency"], (std::vector<int>{4, 64}));
  const std::string text = render_report(report);
  EXPECT_NE(text.find("reads in flight"), std::string::npos) << text;
  EXPECT_NE(text.find("--io-concurrency 64"), std::string::npos) << text;
}

TEST(BenchReport, TableAlignsColumns) {
  Table table({"name", "value"});
  table.add_row({"a", "1.5"});
  table.add_row({"longer", "12.25"});
  const std::string text = table.render("T");
  EXPECT_EQ(text, "T\nname    value\n-------------\na         1.5\nlonger  12.25\n");
  EXPECT_EQ(format_percent(0.5), "50.0%");
  EXPECT_EQ(format_number(1234.4), "1234");
  EXPECT_EQ(format_number(0.012345), "0.0123");
  EXPECT_EQ(format_seconds(0.0025), "2.50 ms");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
}

}  // namespace
}  // namespace chute::bench
