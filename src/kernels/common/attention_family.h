// What attention_decode's and attention_prefill's families share: the buffers of one problem (q,
// K, V, the output with its guard, the float64 reference and one more buffer the family's
// reference uses), kept across its candidates, and a candidate's run through the gate: fresh
// random inputs, the output poisoned, the reference on the same inputs, the plan launched, its
// output compared, timed where it passed. A family derives from it and writes examples(), its
// reference and run() (the sizes, the plan, the tolerance).
#pragma once

#include <functional>
#include <string>

#include "kernels/common/op_family.h"
#include "verify/compare.h"

namespace attune::kernels {

class AttentionFamily : public OpFamily {
 protected:
  using OpFamily::OpFamily;

  // One call's sizes: the elements of q (and of the output) and of each of K and V; the plan's
  // kv and rows arguments.
  struct Call {
    std::size_t q = 0, kv = 0;
    int kv_len = 0, rows = 0;
    bool bf16 = true;
  };
  struct Data {
    std::string key;  // the problem's structural key
    cuda::DeviceBuffer q, k, v, o, ref, aux, workspace;
  };

  // data_ for `problem` (kept while its structural key is the one allocated for), aux of
  // aux_bytes; opens the cuBLASLt handle the split baselines' plans use.
  Status prepare_data(const Problem& problem, const Call& call, std::size_t aux_bytes);
  // One candidate through the gate. reference() enqueues the float64 reference of data_'s
  // inputs into data_.ref; `scaled`: each output's error is measured against data_.aux as its
  // own scale too (DeviceGate::check_output).
  Result<Outcome> run_gated(cuda::CudaEnv& env, const Plan& plan, const Call& call,
                            const std::function<Status()>& reference, const Tolerance& tol,
                            bool scaled, Regime regime);

  Data data_;
};

}  // namespace attune::kernels
