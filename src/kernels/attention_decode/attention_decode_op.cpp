// attention_decode's signature: o = softmax(q . k^T / sqrt(head)) . v for 1-8 new tokens per
// sequence against a KV cache, layout [batch, heads, tokens, head] (PyTorch SDPA's), grouped-query
// (query head h reads KV head h / (q_heads / kv_heads)), causal among the new tokens. Its
// baseline is the split form a user without flash kernels runs: scores by a cuBLASLt batched GEMM,
// a softmax kernel, the value GEMM.
#include <fmt/format.h>

#include "kernels/ops.h"

namespace attune::kernels {

namespace {

// The sizes' joint rules, one line each: what the kernels are written for.
Status check_attention_decode(const Problem& p) {
  const std::int64_t head = *p.int_attr("head"), q_heads = *p.int_attr("q_heads"),
                     kv_heads = *p.int_attr("kv_heads"), q_len = *p.int_attr("q_len"),
                     kv = *p.int_attr("kv");
  if (head != 64 && head != 128 && head != 256)
    return Error::invalid_argument(
        fmt::format("attention_decode head={} is not supported (64, 128, 256)", head));
  if (q_heads % kv_heads != 0)
    return Error::invalid_argument(fmt::format(
        "attention_decode q_heads={} is not a multiple of kv_heads={} (grouped-query attention "
        "shares each KV head among q_heads / kv_heads query heads)",
        q_heads, kv_heads));
  if (q_len > 8)
    return Error::invalid_argument(fmt::format(
        "attention_decode q_len={} is more than 8 (decode steps of 1-8 tokens)", q_len));
  if (q_len > kv)
    return Error::invalid_argument(fmt::format(
        "attention_decode q_len={} is more than kv={} (the cache holds the new tokens too)", q_len,
        kv));
  return Status::success();
}

}  // namespace

const OpSignature& attention_decode_op() {
  static const OpSignature op{
      .name = "attention_decode",
      .sizes = {"batch", "kv", "head", "q_heads", "kv_heads", "q_len"},
      .flags = {},
      .dtypes = {"bf16", "fp16"},
      .max_size = 1 << 20,
      .baseline_config = "kernel=split,splits=1,kv_tile=16,warps=4,vec=8,q_rows=1",
      .example_shape = "8x4096x128x32x8x1",
      .runtime_key = 2,
      .sweep_defaults = {{"q_heads", "32"}, {"kv_heads", "8"}, {"q_len", "1"}},
      .sweep_default_per = {"head"},
      .check = &check_attention_decode};
  return op;
}

}  // namespace attune::kernels
