#include "kernels/ops.h"

namespace attune {

const std::vector<const OpSignature*>& registered_ops() {
#define ATTUNE_OP_SIGNATURE(NAME) &kernels::NAME##_op(),
  static const std::vector<const OpSignature*> ops = {ATTUNE_KERNEL_OPS(ATTUNE_OP_SIGNATURE)};
#undef ATTUNE_OP_SIGNATURE
  return ops;
}

}  // namespace attune
