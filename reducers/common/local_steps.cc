#include "local_steps.h"

namespace hvd::reducers {

Schedule::Op copy_and_scale(Schedule& s, uint8_t* dst, const uint8_t* src,
                            size_t count, size_t esize, double first,
                            double second, size_t piece_elems,
                            Schedule::Op after) {
  if (count == 0 || (dst == src && first == 1.0 && second == 1.0)) {
    return Schedule::kNone;
  }
  if (piece_elems == 0) piece_elems = 1;
  const Schedule::Op all = s.join();
  for (size_t at = 0; at < count; at += piece_elems) {
    const size_t n = count - at < piece_elems ? count - at : piece_elems;
    Schedule::Op last = after;
    if (dst != src) {
      const Schedule::Op copied =
          s.copy(dst + at * esize, src + at * esize, n * esize);
      s.after(copied, last);
      last = copied;
    }
    for (double factor : {first, second}) {
      if (factor == 1.0) continue;
      const Schedule::Op scaled = s.scale(dst + at * esize, n, factor);
      s.after(scaled, last);
      last = scaled;
    }
    s.after(all, last);
  }
  return all;
}

}  // namespace hvd::reducers
