#include "dtypes.h"

namespace hvd::tf {

const char* const kTypeAttr =
    "T: {uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, "
    "double, bool}";

bool to_dl_dtype(TF_DataType dtype, hvd_dl_dtype* out) {
  auto set = [out](uint8_t code, uint8_t bits) {
    *out = hvd_dl_dtype{code, bits, 1};
    return true;
  };
  switch (dtype) {
    case TF_UINT8:
      return set(HVD_DL_UINT, 8);
    case TF_INT8:
      return set(HVD_DL_INT, 8);
    case TF_UINT16:
      return set(HVD_DL_UINT, 16);
    case TF_INT16:
      return set(HVD_DL_INT, 16);
    case TF_INT32:
      return set(HVD_DL_INT, 32);
    case TF_INT64:
      return set(HVD_DL_INT, 64);
    case TF_HALF:
      return set(HVD_DL_FLOAT, 16);
    case TF_BFLOAT16:
      return set(HVD_DL_BFLOAT, 16);
    case TF_FLOAT:
      return set(HVD_DL_FLOAT, 32);
    case TF_DOUBLE:
      return set(HVD_DL_FLOAT, 64);
    case TF_BOOL:
      return set(HVD_DL_BOOL, 8);
    default:
      return false;
  }
}

}  // namespace hvd::tf
