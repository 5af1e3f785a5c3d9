// Tables for libattune-rt's CPU tests: a device, gemm and rmsnorm rows (exact and bucketed), and a
// temporary directory that removes itself.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/device.h"
#include "table/table.h"

namespace attune::runtime::testing {

inline DeviceFingerprint h200() {
  DeviceFingerprint d;
  d.backend = "cuda";
  d.name = "NVIDIA H200";
  d.arch = "sm_90a";
  d.sm_count = 132;
  d.memory_bytes = 150ull << 30;
  return d;
}

inline DeviceFingerprint a100() {
  DeviceFingerprint d = h200();
  d.name = "NVIDIA A100-SXM4-80GB";
  d.arch = "sm_80";
  d.sm_count = 108;
  d.memory_bytes = 80ull << 30;
  return d;
}

// A 32-row block tile: gemm's space takes a tiled block under twice M (taller only multiplies zero
// rows), and the fp16 bucket m=[17, 64] is checked at open at its first point, m=32.
inline constexpr const char* kTiled =
    "kernel=tiled,lt_algo=0,lt_split=0,lt_tile=0,sk_warps=4,sk_nb=2,sk_vec=8,sk_unroll=1,tc_warps="
    "4,tc_nt=1,"
    "tc_unroll=1,tl_bm=32,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_split=1,tl_group=8";
inline constexpr const char* kSkinnyTc =
    "kernel=skinny_tc,lt_algo=0,lt_split=0,lt_tile=0,sk_warps=4,sk_nb=2,sk_vec=8,sk_unroll=1,tc_"
    "warps=4,tc_nt=2,"
    "tc_unroll=1,tl_bm=128,tl_bn=128,tl_bk=32,tl_wm=2,tl_wn=2,tl_stages=3,tl_split=1,tl_group=8";
inline constexpr const char* kRms = "threads=128,rows_per_block=2,vec=8,unroll=1";

inline table::Row row(const std::string& problem, const std::string& config, double us = 10) {
  table::Row r;
  r.problem = *Problem::parse(problem);
  r.backend = "cuda";
  r.config = config;
  r.median_us = us;
  r.baseline_us = us * 1.5;
  r.error = {"max_rel_err", 1e-3, 2e-2};
  return r;
}

// gemm bf16, exact: (m=1, 16, 64) x n=4096, k=4096, and m=1 with a bias; gemm fp16 bucketed on
// m: [1, 16] and [17, 64] at n=k=4096, and [1, 8] at n=1024, k=4096; rmsnorm bf16 exact:
// rows=16 and rows=128 at hidden=4096 with a residual.
inline table::Table sample_table(const DeviceFingerprint& device = h200()) {
  table::Table t;
  t.attune_version = "test";
  t.device = device;
  table::OpTable g{"gemm", "bf16", {}, {}};
  g.rows.push_back(row("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096", kSkinnyTc, 9));
  g.rows.push_back(row("gemm:bias=0,dtype=bf16,k=4096,m=16,n=4096", kSkinnyTc, 11));
  g.rows.push_back(row("gemm:bias=0,dtype=bf16,k=4096,m=64,n=4096", kTiled, 20));
  g.rows.push_back(row("gemm:bias=1,dtype=bf16,k=4096,m=1,n=4096", kSkinnyTc, 9.5));
  t.ops.push_back(g);
  table::OpTable b{
      "gemm", "fp16", {table::MatchPolicy::Kind::kBucketed, "m", "no-harm, least max regret"}, {}};
  table::Row r = row("gemm:bias=0,dtype=fp16,k=4096,n=4096", kSkinnyTc);
  r.bucket = table::Bucket{"m", 1, 16, {1, 8, 16}};
  b.rows.push_back(r);
  r = row("gemm:bias=0,dtype=fp16,k=4096,n=4096", kTiled);
  r.bucket = table::Bucket{"m", 17, 64, {32, 64}};
  b.rows.push_back(r);
  r = row("gemm:bias=0,dtype=fp16,k=4096,n=1024", kSkinnyTc);
  r.bucket = table::Bucket{"m", 1, 8, {1, 8}};
  b.rows.push_back(r);
  t.ops.push_back(b);
  table::OpTable n{"rmsnorm", "bf16", {}, {}};
  n.rows.push_back(row("rmsnorm:dtype=bf16,hidden=4096,residual=1,rows=16", kRms, 3));
  n.rows.push_back(row("rmsnorm:dtype=bf16,hidden=4096,residual=1,rows=128", kRms, 5));
  t.ops.push_back(n);
  return t;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "attune-rt-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace attune::runtime::testing
