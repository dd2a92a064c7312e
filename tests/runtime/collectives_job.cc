// Every collective through the C API, as one job: run with
//   horovodrun -np N runtime_collectives_job CONFIG.toml...
// For each configuration file (transport and reducer choice) it initialises
// horovod, runs every collective over every dtype and a range of counts
// (0, 1, a prime, large), checks the results on every rank, and shuts down
// again, so re-initialisation is exercised too. Exits non-zero on any
// failure, naming it.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "run_job.h"

using namespace mp;

namespace {

std::string tag;  // names ops of this configuration

const hvd_dtype kAllDtypes[] = {
    HVD_UINT8,   HVD_INT8,     HVD_UINT16,  HVD_INT16,   HVD_INT32, HVD_INT64,
    HVD_FLOAT16, HVD_BFLOAT16, HVD_FLOAT32, HVD_FLOAT64, HVD_BOOL};

const char* op_text(hvd_reduce_op op) {
  switch (op) {
    case HVD_OP_SUM:
      return "sum";
    case HVD_OP_AVERAGE:
      return "average";
    case HVD_OP_MIN:
      return "min";
    case HVD_OP_MAX:
      return "max";
    case HVD_OP_PRODUCT:
      return "product";
  }
  return "?";
}

// Rank r's value of element i for an op: small integers, so sums and
// products are exact in every dtype (bfloat16 holds integers up to 256).
double value(hvd_dtype d, hvd_reduce_op op, int r, size_t i) {
  if (d == HVD_BOOL) return ((i + r) % 3) == 0 ? 1 : 0;
  if (op == HVD_OP_PRODUCT) return 1 + ((i + r) % 2);
  double v = static_cast<double>((i * 7 + r * 3) % 30 + 1);
  return is_signed(d) ? v - 15 : v;
}

double reduce_expected(hvd_dtype d, hvd_reduce_op op, size_t i, int ranks) {
  double acc = value(d, op, 0, i);
  for (int r = 1; r < ranks; ++r) {
    double v = value(d, op, r, i);
    if (d == HVD_BOOL) {
      acc = (op == HVD_OP_SUM || op == HVD_OP_MAX) ? (acc || v) : (acc && v);
      continue;
    }
    switch (op) {
      case HVD_OP_SUM:
      case HVD_OP_AVERAGE:
        acc += v;
        break;
      case HVD_OP_MIN:
        acc = std::min(acc, v);
        break;
      case HVD_OP_MAX:
        acc = std::max(acc, v);
        break;
      case HVD_OP_PRODUCT:
        acc *= v;
        break;
    }
  }
  if (op == HVD_OP_AVERAGE) {
    acc /= ranks;
    if (!is_float(d)) acc = std::trunc(acc);
  }
  return acc;
}

bool close_enough(hvd_dtype d, double got, double want) {
  if (!is_float(d)) return got == want;
  double tol = d == HVD_FLOAT16 || d == HVD_BFLOAT16 ? 1e-2 : 1e-6;
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

// close_enough for dtype `d`, as expect_values takes it.
std::function<bool(double, double)> close_in(hvd_dtype d) {
  return [d](double got, double want) { return close_enough(d, got, want); };
}

struct Check {
  Buffer in, out;
  hvd_handle* handle = nullptr;
  std::function<void(Check&)> verify;
  std::string name;
  hvd_reduce_op op = HVD_OP_SUM;
};

// Enqueues every check at once (so they fuse), in an order that differs
// between ranks, then waits for all and verifies.
void run_all(std::vector<std::unique_ptr<Check>>& checks,
             const std::function<hvd_op(Check&)>& make) {
  std::vector<size_t> order(checks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (R % 2 == 1) std::reverse(order.begin(), order.end());
  for (size_t i : order) {
    Check& c = *checks[i];
    hvd_op op = make(c);
    hvd_status s = hvd_enqueue(&op, &c.handle);
    expect(s == HVD_OK, "enqueue " + c.name + ": " + hvd_last_error());
  }
  for (auto& cp : checks) {
    Check& c = *cp;
    if (!c.handle) continue;
    hvd_status s = hvd_wait(c.handle, 120000);
    expect(s == HVD_OK, c.name + ": " + hvd_status_string(s) + ": " +
                            hvd_handle_message(c.handle));
    if (s == HVD_OK) c.verify(c);
    hvd_release(c.handle);
  }
}

void allreduce_all_dtypes() {
  const size_t counts[] = {0, 1, 1009};
  const hvd_reduce_op ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN,
                               HVD_OP_MAX, HVD_OP_PRODUCT};
  for (hvd_dtype d : kAllDtypes) {
    std::vector<std::unique_ptr<Check>> checks;
    for (size_t count : counts) {
      for (hvd_reduce_op op : ops) {
        if (d == HVD_BOOL && op == HVD_OP_AVERAGE) continue;
        auto c = std::make_unique<Check>();
        c->name = tag + ".allreduce." + dtype_name(d) + "." + op_text(op) +
                  "." + std::to_string(count);
        c->in = Buffer(d, {static_cast<int64_t>(count)});
        for (size_t i = 0; i < count; ++i) c->in.set(i, value(d, op, R, i));
        bool in_place = count % 2 == 1;
        c->out = in_place ? Buffer() : Buffer(d, {static_cast<int64_t>(count)});
        c->verify = [d, op, in_place](Check& k) {
          expect_values(
              in_place ? k.in : k.out, k.name,
              [d, op](size_t i) {
                Buffer want(d, {1});  // rounded as the dtype holds it
                want.set(0, reduce_expected(d, op, i, N));
                return want.get(0);
              },
              close_in(d));
        };
        c->op = op;
        checks.push_back(std::move(c));
      }
    }
    run_all(checks, [](Check& c) {
      hvd_op op = make_op(HVD_COLL_ALLREDUCE, c.name, &c.in.desc, 1,
                          c.out.data.empty() ? nullptr : &c.out.desc);
      op.op = c.op;
      return op;
    });
  }
}

void allreduce_large_and_scaled() {
  std::vector<std::unique_ptr<Check>> checks;
  for (hvd_dtype d : {HVD_FLOAT32, HVD_INT8}) {
    auto c = std::make_unique<Check>();
    size_t count = (size_t{1} << 20) + 3;
    c->name = tag + ".allreduce.large." + dtype_name(d);
    c->in = Buffer(d, {static_cast<int64_t>(count)});
    for (size_t i = 0; i < count; ++i) c->in.set(i, value(d, HVD_OP_SUM, R, i));
    c->verify = [d, count](Check& k) {
      for (size_t i = 0; i < count; i += 997) {
        double want = reduce_expected(d, HVD_OP_SUM, i, N);
        if (k.in.get(i) != want) {
          expect(false, k.name + ": element " + std::to_string(i) + " is " +
                            std::to_string(k.in.get(i)) + ", expected " +
                            std::to_string(want));
          return;
        }
      }
    };
    checks.push_back(std::move(c));
  }
  run_all(checks, [](Check& c) {
    return make_op(HVD_COLL_ALLREDUCE, c.name, &c.in.desc, 1);
  });

  // prescale 0.5 then postscale 4: twice the sum, exactly.
  Buffer b(HVD_FLOAT32, {33});
  for (size_t i = 0; i < 33; ++i)
    b.set(i, value(HVD_FLOAT32, HVD_OP_SUM, R, i));
  std::string name = tag + ".allreduce.scaled";
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1);
  op.prescale = 0.5;
  op.postscale = 4;
  if (run_op(op) == HVD_OK) {
    expect_values(b, name, [](size_t i) {
      return 2 * reduce_expected(HVD_FLOAT32, HVD_OP_SUM, i, N);
    });
  }
}

void grouped_allreduce() {
  Buffer t[3] = {Buffer(HVD_FLOAT64, {4, 5}), Buffer(HVD_FLOAT64, {0}),
                 Buffer(HVD_FLOAT64, {7})};
  for (auto& b : t) {
    for (size_t i = 0; i < b.elements; ++i)
      b.set(i, value(HVD_FLOAT64, HVD_OP_SUM, R, i));
  }
  hvd_tensor descs[3] = {t[0].desc, t[1].desc, t[2].desc};
  std::string name = tag + ".grouped.allreduce";
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, name, descs, 3);
  if (run_op(op) != HVD_OK) return;
  for (auto& b : t) {
    for (size_t i = 0; i < b.elements; ++i) {
      expect(b.get(i) == reduce_expected(HVD_FLOAT64, HVD_OP_SUM, i, N),
             name + ": wrong sum");
    }
  }
}

// FNV-1a of a buffer.
int64_t fingerprint(const Buffer& b) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i + 1 < b.data.size(); ++i) {
    h ^= b.data[i];
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h & 0x7fffffffffffffffull);
}

void bitwise_identical() {
  Buffer b(HVD_FLOAT32, {100003});
  for (size_t i = 0; i < b.elements; ++i) {
    b.set(i, std::sin(0.001 * static_cast<double>(i) * (R + 1)) * 1000.0 / 3.0);
  }
  std::string name = tag + ".bitwise";
  if (run_op(make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1)) != HVD_OK) return;
  Buffer fp(HVD_INT64, {1});
  fp.set(0, 0);
  *reinterpret_cast<int64_t*>(fp.data.data()) = fingerprint(b);
  hvd_handle* h = nullptr;
  std::string gname = tag + ".bitwise.gather";
  if (run_op(make_op(HVD_COLL_ALLGATHER, gname, &fp.desc, 1), &h) != HVD_OK)
    return;
  hvd_tensor all{};
  expect(hvd_handle_output(h, 0, &all) == HVD_OK, gname + ": no output");
  const int64_t* prints = static_cast<const int64_t*>(all.data);
  for (int r = 0; r < N; ++r) {
    expect(prints[r] == prints[0],
           "allreduce result differs between rank 0 and rank " +
               std::to_string(r));
  }
  hvd_release(h);
}

double gather_value(int r, int64_t row, int64_t col) {
  return static_cast<double>((r * 7 + row * 3 + col) % 50);
}

void allgather_all_dtypes() {
  for (hvd_dtype d : kAllDtypes) {
    std::vector<std::unique_ptr<Check>> checks;
    for (int variant = 0; variant < 3; ++variant) {
      auto c = std::make_unique<Check>();
      // Rows per rank differ (some ranks give none); a prime; then large.
      auto rows_of = [variant](int r) -> int64_t {
        if (variant == 0) return r % 3;
        if (variant == 1) return 1 + (r == 0 ? 0 : 1008);
        return 20000 + r;
      };
      const int64_t cols = variant == 2 ? 5 : 3;
      if (variant == 2 && d != HVD_FLOAT32 && d != HVD_UINT8) continue;
      c->name =
          tag + ".allgather." + dtype_name(d) + "." + std::to_string(variant);
      c->in = Buffer(d, {rows_of(R), cols});
      for (int64_t j = 0; j < rows_of(R); ++j) {
        for (int64_t k = 0; k < cols; ++k) {
          c->in.set(j * cols + k,
                    d == HVD_BOOL ? (j + k + R) % 2 : gather_value(R, j, k));
        }
      }
      c->verify = [d, rows_of, cols](Check& k) {
        hvd_tensor out{};
        if (hvd_handle_output(k.handle, 0, &out) != HVD_OK) {
          expect(false, k.name + ": no output: " + hvd_last_error());
          return;
        }
        int64_t total = 0;
        for (int r = 0; r < N; ++r) total += rows_of(r);
        expect(out.ndim == 2 && out.shape[0] == total && out.shape[1] == cols,
               k.name + ": wrong output shape");
        int64_t row = 0;
        for (int r = 0; r < N; ++r) {
          for (int64_t j = 0; j < rows_of(r); ++j, ++row) {
            for (int64_t c = 0; c < cols; ++c) {
              double want =
                  d == HVD_BOOL ? (j + c + r) % 2 : gather_value(r, j, c);
              if (load(d, out.data, row * cols + c) != want) {
                expect(false,
                       k.name + ": row " + std::to_string(row) + " wrong");
                return;
              }
            }
          }
        }
      };
      checks.push_back(std::move(c));
    }
    run_all(checks, [](Check& c) {
      return make_op(HVD_COLL_ALLGATHER, c.name, &c.in.desc, 1);
    });
  }

  // A grouped allgather of two tensors with different trailing shapes.
  Buffer a(HVD_INT32, {R + 1, 2}), b(HVD_INT32, {2 * R, 1});
  for (size_t i = 0; i < a.elements; ++i)
    a.set(i, R * 100 + static_cast<double>(i));
  for (size_t i = 0; i < b.elements; ++i)
    b.set(i, R * 1000 + static_cast<double>(i));
  hvd_tensor descs[2] = {a.desc, b.desc};
  std::string name = tag + ".grouped.allgather";
  hvd_handle* h = nullptr;
  if (run_op(make_op(HVD_COLL_ALLGATHER, name, descs, 2), &h) != HVD_OK) return;
  hvd_tensor oa{}, ob{};
  expect(hvd_handle_output(h, 0, &oa) == HVD_OK &&
             hvd_handle_output(h, 1, &ob) == HVD_OK,
         name + ": outputs");
  size_t at = 0, bt = 0;
  for (int r = 0; r < N; ++r) {
    for (int i = 0; i < (r + 1) * 2; ++i, ++at) {
      expect(static_cast<const int32_t*>(oa.data)[at] == r * 100 + i,
             name + ": tensor 0");
    }
    for (int i = 0; i < 2 * r; ++i, ++bt) {
      expect(static_cast<const int32_t*>(ob.data)[bt] == r * 1000 + i,
             name + ": tensor 1");
    }
  }
  hvd_release(h);
}

void broadcast_every_root() {
  for (int root = 0; root < N; ++root) {
    std::vector<std::unique_ptr<Check>> checks;
    for (hvd_dtype d : kAllDtypes) {
      for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{257}}) {
        auto c = std::make_unique<Check>();
        c->name = tag + ".broadcast." + std::to_string(root) + "." +
                  dtype_name(d) + "." + std::to_string(count);
        c->in = Buffer(d, {count});
        auto v = [d](int r, size_t i) {
          return d == HVD_BOOL ? (r + i) % 2
                               : static_cast<double>(r * 10 + i % 90);
        };
        for (int64_t i = 0; i < count; ++i) c->in.set(i, v(R, i));
        bool separate = count == 257;
        if (separate) c->out = Buffer(d, {count});
        c->verify = [root, count, separate, v](Check& k) {
          const Buffer& res = separate ? k.out : k.in;
          for (int64_t i = 0; i < count; ++i) {
            if (res.get(i) != v(root, i)) {
              expect(false,
                     k.name + ": element " + std::to_string(i) + " wrong");
              return;
            }
          }
          if (separate) {  // the input is untouched
            expect(k.in.get(0) == v(R, 0), k.name + ": input changed");
          }
        };
        checks.push_back(std::move(c));
      }
    }
    run_all(checks, [root](Check& c) {
      hvd_op op = make_op(HVD_COLL_BROADCAST, c.name, &c.in.desc, 1,
                          c.out.data.empty() ? nullptr : &c.out.desc);
      op.root = root;
      return op;
    });
  }
}

void alltoall_variants() {
  for (hvd_dtype d : kAllDtypes) {
    for (int variant = 0; variant < 3; ++variant) {
      // Uneven splits (some zero), an equal split given as none, large.
      if (variant == 2 && d != HVD_FLOAT32) continue;
      auto split = [variant](int from, int to) -> int64_t {
        if (variant == 2) return 20011 + to;
        return variant == 0 ? (from + 2 * to) % 3 : 2;
      };
      const int64_t cols = 2;
      int64_t rows = 0;
      std::vector<int32_t> splits(N);
      for (int p = 0; p < N; ++p) {
        splits[p] = static_cast<int32_t>(split(R, p));
        rows += splits[p];
      }
      auto v = [d](int from, int to, int64_t j, int64_t c) {
        if (d == HVD_BOOL) return static_cast<double>((from + to + j + c) % 2);
        return static_cast<double>((from * 50 + to * 10 + j * 2 + c) % 100);
      };
      Buffer in(d, {rows, cols});
      int64_t row = 0;
      for (int p = 0; p < N; ++p) {
        for (int64_t j = 0; j < split(R, p); ++j, ++row) {
          for (int64_t c = 0; c < cols; ++c)
            in.set(row * cols + c, v(R, p, j, c));
        }
      }
      std::string name =
          tag + ".alltoall." + dtype_name(d) + "." + std::to_string(variant);
      hvd_op op = make_op(HVD_COLL_ALLTOALL, name, &in.desc, 1);
      if (variant != 1) {
        op.splits = splits.data();
        op.split_count = N;
      }
      hvd_handle* h = nullptr;
      if (run_op(op, &h) != HVD_OK) continue;
      const int32_t* got = nullptr;
      int32_t count = 0;
      expect(
          hvd_handle_received_splits(h, &got, &count) == HVD_OK && count == N,
          name + ": received splits");
      hvd_tensor out{};
      expect(hvd_handle_output(h, 0, &out) == HVD_OK, name + ": output");
      auto rows_match = [&]() {
        int64_t at = 0;
        for (int s = 0; s < N && got; ++s) {
          if (got[s] != split(s, R)) {
            return "received split from rank " + std::to_string(s);
          }
          for (int64_t j = 0; j < split(s, R); ++j, ++at) {
            for (int64_t c = 0; c < cols; ++c) {
              if (load(d, out.data, at * cols + c) != v(s, R, j, c)) {
                return "row " + std::to_string(j) + " from rank " +
                       std::to_string(s);
              }
            }
          }
        }
        return std::string();
      };
      std::string wrong = rows_match();
      expect(wrong.empty(), name + ": wrong " + wrong);
      hvd_release(h);
    }
  }
}

void reducescatter_variants() {
  std::vector<std::unique_ptr<Check>> checks;
  for (hvd_dtype d : kAllDtypes) {
    for (int64_t rows :
         {int64_t{0}, int64_t{1}, int64_t{2 * N + 1}, int64_t{10007}}) {
      auto c = std::make_unique<Check>();
      const int64_t cols = 3;
      c->name =
          tag + ".reducescatter." + dtype_name(d) + "." + std::to_string(rows);
      c->in = Buffer(d, {rows, cols});
      for (size_t i = 0; i < c->in.elements; ++i)
        c->in.set(i, value(d, HVD_OP_SUM, R, i));
      int64_t mine = rows / N + (R < rows % N ? 1 : 0);
      int64_t before = 0;
      for (int r = 0; r < R; ++r) before += rows / N + (r < rows % N ? 1 : 0);
      c->out = Buffer(d, {mine, cols});
      c->verify = [d, before, cols](Check& k) {
        expect_values(
            k.out, k.name,
            [d, before, cols](size_t i) {
              return reduce_expected(d, HVD_OP_SUM, before * cols + i, N);
            },
            close_in(d));
      };
      checks.push_back(std::move(c));
    }
  }
  run_all(checks, [](Check& c) {
    return make_op(HVD_COLL_REDUCESCATTER, c.name, &c.in.desc, 1, &c.out.desc);
  });

  // Grouped, averaged.
  Buffer a(HVD_FLOAT64, {N + 1, 2}), b(HVD_FLOAT64, {2 * N});
  for (size_t i = 0; i < a.elements; ++i)
    a.set(i, value(HVD_FLOAT64, HVD_OP_SUM, R, i));
  for (size_t i = 0; i < b.elements; ++i)
    b.set(i, value(HVD_FLOAT64, HVD_OP_SUM, R, i));
  auto rows_of = [](int64_t rows, int r) {
    return rows / N + (r < rows % N ? 1 : 0);
  };
  Buffer oa(HVD_FLOAT64, {rows_of(N + 1, R), 2}),
      ob(HVD_FLOAT64, {rows_of(2 * N, R)});
  hvd_tensor ins[2] = {a.desc, b.desc}, outs[2] = {oa.desc, ob.desc};
  std::string name = tag + ".grouped.reducescatter";
  hvd_op op = make_op(HVD_COLL_REDUCESCATTER, name, ins, 2, outs);
  op.op = HVD_OP_AVERAGE;
  if (run_op(op) != HVD_OK) return;
  int64_t before_a = 0, before_b = 0;
  for (int r = 0; r < R; ++r) {
    before_a += rows_of(N + 1, r);
    before_b += rows_of(2 * N, r);
  }
  for (size_t i = 0; i < oa.elements; ++i) {
    expect(close_enough(HVD_FLOAT64, oa.get(i),
                        reduce_expected(HVD_FLOAT64, HVD_OP_AVERAGE,
                                        before_a * 2 + i, N)),
           name + ": tensor 0");
  }
  for (size_t i = 0; i < ob.elements; ++i) {
    expect(close_enough(
               HVD_FLOAT64, ob.get(i),
               reduce_expected(HVD_FLOAT64, HVD_OP_AVERAGE, before_b + i, N)),
           name + ": tensor 1");
  }
}

void barrier_and_join() {
  hvd_op bar = bare_op(HVD_COLL_BARRIER);
  run_op(bar);
  run_op(bar);

  // The last rank joins at once; the others still allreduce, and get the
  // sum without it.
  Buffer b(HVD_FLOAT32, {16});
  for (size_t i = 0; i < 16; ++i) b.set(i, R + 1);
  if (R != N - 1) {
    std::string name = tag + ".after.join";
    if (run_op(make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1)) == HVD_OK) {
      double want = (N - 1) * N / 2.0;  // 1 + 2 + ... + (N-1)
      expect(b.get(0) == want && b.get(15) == want,
             name + ": " + std::to_string(b.get(0)) + ", expected " +
                 std::to_string(want));
    }
  }
  if (const auto who = join_and_wait()) {
    expect(*who >= 0 && *who < N, "join: last rank " + std::to_string(*who));
  }
}

// Every rank but 0 joins at once; rank 0 runs allreduces alone (the joined
// ranks contribute zeros, even to a grouped one), then joins last: every
// rank's join says rank 0 was the last.
void join_returns_last_rank() {
  if (R == 0) {
    Buffer a(HVD_FLOAT64, {9}), b(HVD_FLOAT64, {3, 2});
    for (size_t i = 0; i < a.elements; ++i) a.set(i, 2.5 + i);
    for (size_t i = 0; i < b.elements; ++i) b.set(i, 7 * i);
    std::string name = tag + ".alone";
    if (run_op(make_op(HVD_COLL_ALLREDUCE, name, &a.desc, 1)) == HVD_OK) {
      expect(a.get(0) == 2.5 && a.get(8) == 10.5,
             name + ": joined ranks did not contribute zeros: " +
                 std::to_string(a.get(8)));
    }
    hvd_tensor both[2] = {a.desc, b.desc};
    std::string grouped = tag + ".alone.grouped";
    if (run_op(make_op(HVD_COLL_ALLREDUCE, grouped, both, 2)) == HVD_OK) {
      expect(a.get(8) == 10.5 && b.get(5) == 35,
             grouped + ": joined ranks did not contribute zeros");
    }
  }
  if (const auto who = join_and_wait()) {
    expect(*who == 0, "join: the last rank to join is " + std::to_string(*who) +
                          ", expected 0");
  }
}

void process_set() {
  if (N < 3) return;
  // Set 1 is the even ranks.
  if (R % 2 != 0) return;
  Buffer b(HVD_INT32, {8});
  for (size_t i = 0; i < 8; ++i) b.set(i, R + static_cast<double>(i));
  std::string name = tag + ".set1";
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1);
  op.process_set = 1;
  if (run_op(op) != HVD_OK) return;
  int members = (N + 1) / 2;
  double rank_sum = 0;
  for (int r = 0; r < N; r += 2) rank_sum += r;
  for (size_t i = 0; i < 8; ++i) {
    expect(b.get(i) == rank_sum + members * static_cast<double>(i),
           name + ": wrong sum");
  }
}

}  // namespace

int main(int argc, char** argv) {
  // horovodrun says HOROVOD_SIZE, mpirun OMPI_COMM_WORLD_SIZE.
  const char* size_text = getenv("HOROVOD_SIZE");
  if (!size_text) size_text = getenv("OMPI_COMM_WORLD_SIZE");
  const int size_hint = std::atoi(size_text ? size_text : "1");
  std::vector<int32_t> even;
  for (int r = 0; r < size_hint; r += 2) even.push_back(r);
  JobOptions options;
  options.process_sets = {even};
  return run_job_per_config(
      argc, argv, "collectives",
      [&](const std::string& stem) {
        tag = stem;
        expect(N == size_hint, "hvd_size");
        expect(hvd_local_rank() >= 0 && hvd_local_size() >= 1, "local queries");
        expect(hvd_cross_rank() >= 0 && hvd_cross_size() >= 1, "cross queries");
        allreduce_all_dtypes();
        allreduce_large_and_scaled();
        grouped_allreduce();
        bitwise_identical();
        allgather_all_dtypes();
        broadcast_every_root();
        alltoall_variants();
        reducescatter_variants();
        barrier_and_join();
        join_returns_last_rank();
        process_set();
      },
      options);
}
