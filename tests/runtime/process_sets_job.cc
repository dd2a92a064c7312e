// Process sets through the C API, as one job of 4 ranks: static sets
// {0, 1} and {2, 3} run different op sequences (with the same names) side
// by side, and an op held back in one set does not hold up the other or
// the global set; an op on a set this rank is not in is refused. With
// [runtime] dynamic_process_sets on: sets added at run time get the same id
// on every rank and run independently, removing one fails its ops still in
// negotiation, bad or mismatched calls fail on every rank, and the
// changes also start without waiting (hvd_enqueue_add_process_set), each
// completing through its handle. With it off, hvd_add_process_set is
// refused. Usage:
//   horovodrun -np 4 runtime_process_sets_job DYNAMIC.toml STATIC.toml
#include <string>
#include <vector>

#include "run_job.h"

using namespace mp;

namespace {

hvd_op on_set(hvd_op op, int32_t set) {
  op.process_set = set;
  return op;
}

double sum_over(const std::vector<int>& ranks, double (*f)(int, size_t),
                size_t i) {
  double s = 0;
  for (int r : ranks) s += f(r, i);
  return s;
}

double contribution(int r, size_t i) {
  return r * 100.0 + static_cast<double>(i);
}

// Set {0, 1}: allreduces of growing size; set {2, 3}: allgathers and
// broadcasts. Both use the names t.0, t.1, ...; twice, so the second round
// runs from the response cache.
void different_sequences_in_disjoint_sets() {
  const int32_t set = R < 2 ? 1 : 2;
  const std::vector<int> members =
      R < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 12; ++k) {
      std::string name = "t." + std::to_string(k);
      if (set == 1) {
        Buffer b(HVD_FLOAT64, {static_cast<int64_t>(k * 50 + 1)});
        for (size_t i = 0; i < b.elements; ++i) b.set(i, contribution(R, i));
        if (run_op(on_set(make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1),
                          set)) == HVD_OK) {
          size_t last = b.elements - 1;
          expect(b.get(last) == sum_over(members, contribution, last),
                 "set 1 " + name + ": " + std::to_string(b.get(last)));
        }
      } else if (k % 2 == 0) {
        Buffer b(HVD_INT32, {static_cast<int64_t>(k + 1)});
        for (size_t i = 0; i < b.elements; ++i) b.set(i, R);
        hvd_handle* h = nullptr;
        if (run_op(on_set(make_op(HVD_COLL_ALLGATHER, name, &b.desc, 1), set),
                   &h) == HVD_OK) {
          hvd_tensor out{};
          expect_ok(hvd_handle_output(h, 0, &out), "set 2 allgather output");
          expect(out.shape[0] == 2 * (k + 1) &&
                     load(HVD_INT32, out.data, 0) == 2 &&
                     load(HVD_INT32, out.data, k + 1) == 3,
                 "set 2 allgather " + name);
          hvd_release(h);
        }
      } else {
        Buffer b(HVD_INT32, {3});
        for (size_t i = 0; i < 3; ++i) b.set(i, R == 3 ? 40 + k : -1);
        hvd_op op = on_set(make_op(HVD_COLL_BROADCAST, name, &b.desc, 1), set);
        op.root = 1;  // set rank 1: world rank 3
        if (run_op(op) == HVD_OK) {
          expect(b.get(2) == 40 + k, "set 2 broadcast " + name);
        }
      }
    }
  }
}

// Rank 0 submits "held" on set 1; rank 1 submits it only after the global
// "released" allreduce, which needs ranks 2 and 3 to have finished their
// whole sequence on set 2 first.
void held_op_does_not_block_other_sets() {
  Buffer held(HVD_FLOAT32, {4});
  for (size_t i = 0; i < 4; ++i) held.set(i, R + 1);
  hvd_op held_op =
      on_set(make_op(HVD_COLL_ALLREDUCE, "held", &held.desc, 1), 1);
  hvd_handle* h = nullptr;
  if (R == 0) expect_ok(hvd_enqueue(&held_op, &h), "enqueue held");
  if (R >= 2) {
    for (int k = 0; k < 5; ++k) {
      Buffer b(HVD_FLOAT32, {16});
      for (size_t i = 0; i < 16; ++i) b.set(i, 1);
      std::string name = "busy." + std::to_string(k);
      if (run_op(on_set(make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1), 2)) ==
          HVD_OK) {
        expect(b.get(15) == 2, "set 2 " + name + " while set 1 waits");
      }
    }
  }
  if (R == 0) {
    int32_t done = 0;
    expect_ok(hvd_poll(h, &done), "poll held");
    expect(!done, "held finished before rank 1 submitted it");
  }
  Buffer released(HVD_INT32, {1});
  released.set(0, 1);
  if (run_op(make_op(HVD_COLL_ALLREDUCE, "released", &released.desc, 1)) ==
      HVD_OK) {
    expect(released.get(0) == N, "released");
  }
  if (R == 1) expect_ok(hvd_enqueue(&held_op, &h), "enqueue held");
  if (h) {
    expect(hvd_wait(h, 60000) == HVD_OK,
           std::string("held: ") + hvd_handle_message(h));
    expect(held.get(3) == 3, "held: " + std::to_string(held.get(3)));
    hvd_release(h);
  }
}

void not_a_member_is_refused() {
  Buffer b(HVD_FLOAT32, {2});
  hvd_op op = on_set(make_op(HVD_COLL_ALLREDUCE, "outsider", &b.desc, 1),
                     R < 2 ? 2 : 1);
  hvd_handle* h = nullptr;
  hvd_status s = hvd_enqueue(&op, &h);
  std::string message = hvd_last_error();
  expect(s == HVD_ERR_INVALID_ARGUMENT && !h,
         std::string("an op on another set: ") + hvd_status_string(s));
  expect(message.find("not a member") != std::string::npos &&
             message.find("process set") != std::string::npos,
         "an op on another set: message: " + message);
}

// Every rank's value, the same on all? The minimum and maximum agree.
void expect_same_everywhere(int32_t value, const std::string& what) {
  Buffer lo(HVD_INT32, {1}), hi(HVD_INT32, {1});
  lo.set(0, value);
  hi.set(0, value);
  std::string min_name = "same.min." + what, max_name = "same.max." + what;
  hvd_op a = make_op(HVD_COLL_ALLREDUCE, min_name, &lo.desc, 1);
  a.op = HVD_OP_MIN;
  hvd_op b = make_op(HVD_COLL_ALLREDUCE, max_name, &hi.desc, 1);
  b.op = HVD_OP_MAX;
  run_op(a);
  run_op(b);
  expect(lo.get(0) == value && hi.get(0) == value,
         what + " differs between ranks: " + std::to_string(lo.get(0)) +
             " .. " + std::to_string(hi.get(0)));
}

void expect_failure(hvd_status got, hvd_status want, const std::string& what,
                    const std::string& detail) {
  std::string message = hvd_last_error();
  expect(got == want, what + ": " + hvd_status_string(got) + " (" + message +
                          "), expected " + hvd_status_string(want));
  expect(message.find(detail) != std::string::npos,
         what + ": message lacks '" + detail + "': " + message);
}

void dynamic_sets() {
  int32_t even[] = {0, 2}, odd[] = {1, 3};
  int32_t even_id = -1, odd_id = -1;
  expect_ok(hvd_add_process_set(even, 2, &even_id), "add {0, 2}");
  expect_ok(hvd_add_process_set(odd, 2, &odd_id), "add {1, 3}");
  expect(even_id == 3 && odd_id == 4,
         "new ids " + std::to_string(even_id) + ", " + std::to_string(odd_id));
  expect_same_everywhere(even_id, "even_id");
  const int32_t mine = R % 2 == 0 ? even_id : odd_id;
  for (int k = 0; k < 6; ++k) {
    Buffer b(HVD_INT64, {static_cast<int64_t>(3 + k)});
    for (size_t i = 0; i < b.elements; ++i) b.set(i, R + 1);
    std::string name = "dyn." + std::to_string(k);
    if (run_op(on_set(make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1), mine)) ==
        HVD_OK) {
      double want = R % 2 == 0 ? 1 + 3 : 2 + 4;
      expect(b.get(0) == want,
             "dynamic set " + name + ": " + std::to_string(b.get(0)));
    }
  }

  // Rank 0's "orphan" is still in negotiation (rank 2 never submits it)
  // when the set goes.
  Buffer orphan(HVD_FLOAT32, {2});
  hvd_op op =
      on_set(make_op(HVD_COLL_ALLREDUCE, "orphan", &orphan.desc, 1), even_id);
  hvd_handle* h = nullptr;
  if (R == 0) expect_ok(hvd_enqueue(&op, &h), "enqueue orphan");
  expect_ok(hvd_remove_process_set(even_id), "remove the even set");
  if (h) {
    hvd_status s = hvd_wait(h, 60000);
    std::string message = hvd_handle_message(h);
    expect(s == HVD_ERR_ABORTED &&
               message.find("'orphan'") != std::string::npos &&
               message.find("removed") != std::string::npos,
           std::string("orphan: ") + hvd_status_string(s) + ": " + message);
    hvd_release(h);
  }
  if (R % 2 == 0) {
    hvd_status s = hvd_enqueue(&op, &h);
    expect_failure(s, HVD_ERR_INVALID_ARGUMENT, "an op on a removed set",
                   "does not exist");
  }
  // The odd set still works.
  Buffer b(HVD_INT32, {2});
  b.set(0, 5);
  if (R % 2 == 1 &&
      run_op(on_set(make_op(HVD_COLL_ALLREDUCE, "dyn.after", &b.desc, 1),
                    odd_id)) == HVD_OK) {
    expect(b.get(0) == 10, "odd set after removing the even one");
  }

  int32_t id = -1;
  expect_failure(hvd_remove_process_set(even_id), HVD_ERR_INVALID_ARGUMENT,
                 "removing a removed set", "does not exist");
  expect_failure(hvd_remove_process_set(0), HVD_ERR_INVALID_ARGUMENT,
                 "removing the global set", "global");
  int32_t bad[] = {0, 99};
  expect_failure(hvd_add_process_set(bad, 2, &id), HVD_ERR_INVALID_ARGUMENT,
                 "adding rank 99", "99");
  int32_t twice[] = {1, 1};
  expect_failure(hvd_add_process_set(twice, 2, &id), HVD_ERR_INVALID_ARGUMENT,
                 "adding a rank twice", "twice");
  int32_t theirs[] = {0, 1, R == 0 ? 2 : 3};
  expect_failure(hvd_add_process_set(theirs, 3, &id), HVD_ERR_MISMATCH,
                 "ranks disagreeing on the members", "disagree");
  // After all that, ids go on from where they were.
  int32_t all[] = {3, 2, 1, 0};
  expect_ok(hvd_add_process_set(all, 4, &id), "add {3, 2, 1, 0}");
  expect(id == 5, "id after failed changes: " + std::to_string(id));
  Buffer c(HVD_INT32, {1});
  c.set(0, R);
  hvd_op bop = on_set(make_op(HVD_COLL_BROADCAST, "reordered", &c.desc, 1), id);
  bop.root = 0;  // set rank 0 is world rank 3
  if (run_op(bop) == HVD_OK) expect(c.get(0) == 3, "set order is as given");
  expect_ok(hvd_remove_process_set(odd_id), "remove the odd set");
  expect_ok(hvd_remove_process_set(id), "remove {3, 2, 1, 0}");
}

// The non-blocking forms: rank 0 starts adding a set long before the others
// do, which its handle shows (a bounded wait times out); the ranks meet in
// the "gate" allreduce meanwhile. The handle then holds the new id, the same
// on every rank; removing it the same way; a wrong argument fails the
// change through its handle on every rank, naming the call.
void started_changes() {
  int32_t pair[] = {0, 1};
  hvd_handle* h = nullptr;
  expect_failure(hvd_enqueue_add_process_set(pair, 2, nullptr),
                 HVD_ERR_INVALID_ARGUMENT, "a start with no handle", "null");
  if (R == 0) {
    expect_ok(hvd_enqueue_add_process_set(pair, 2, &h), "start adding {0, 1}");
    int32_t done = 1;
    expect_ok(hvd_poll(h, &done), "poll the change");
    expect(!done, "the change finished before the others started it");
    expect(hvd_wait(h, 200) == HVD_ERR_TIMEOUT,
           "a bounded wait for a change the others have not started");
  }
  Buffer gate(HVD_INT32, {1});
  gate.set(0, 1);
  if (run_op(make_op(HVD_COLL_ALLREDUCE, "gate", &gate.desc, 1)) == HVD_OK) {
    expect(gate.get(0) == N, "gate while rank 0's change waits");
  }
  if (R != 0) {
    expect_ok(hvd_enqueue_add_process_set(pair, 2, &h), "start adding {0, 1}");
  }
  expect(hvd_wait(h, 60000) == HVD_OK,
         std::string("adding {0, 1}: ") + hvd_handle_message(h));
  hvd_tensor out{};
  out.struct_size = sizeof out;
  expect_ok(hvd_handle_output(h, 0, &out), "the change's output");
  const int32_t id = static_cast<int32_t>(load(HVD_INT32, out.data, 0));
  hvd_release(h);
  expect_same_everywhere(id, "started_id");
  int32_t set_rank = -2, set_size = 0;
  expect_ok(hvd_process_set_rank(id, &set_rank, &set_size), "the new set");
  expect(set_size == 2 && set_rank == (R < 2 ? R : -1),
         "the new set's layout: rank " + std::to_string(set_rank) + " of " +
             std::to_string(set_size));

  expect_ok(hvd_enqueue_remove_process_set(id, &h), "start removing it");
  expect(hvd_wait(h, 60000) == HVD_OK,
         std::string("removing it: ") + hvd_handle_message(h));
  expect_ok(hvd_handle_output(h, 0, &out), "the removal's output");
  expect(load(HVD_INT32, out.data, 0) == id, "the removal names the set");
  hvd_release(h);
  expect(hvd_process_set_rank(id, &set_rank, &set_size) == HVD_ERR_NOT_FOUND,
         "the set is gone");

  expect_ok(hvd_enqueue_remove_process_set(0, &h), "start removing set 0");
  hvd_status s = hvd_wait(h, 60000);
  std::string message = hvd_handle_message(h);
  expect(
      s == HVD_ERR_INVALID_ARGUMENT &&
          message.rfind("hvd_remove_process_set", 0) == 0 &&
          message.find("global") != std::string::npos,
      std::string("removing set 0: ") + hvd_status_string(s) + ": " + message);
  hvd_release(h);
}

// The cases of both runs; then, with dynamic sets, sets added and removed
// (waited for, then started), and without them hvd_add_process_set refused.
void process_sets(bool dynamic) {
  if (N != 4) {
    expect(false, "needs 4 ranks, has " + std::to_string(N));
    return;
  }
  different_sequences_in_disjoint_sets();
  held_op_does_not_block_other_sets();
  not_a_member_is_refused();
  if (dynamic) {
    dynamic_sets();
    started_changes();
  } else {
    int32_t id = -1, pair[] = {0, 1};
    expect_failure(hvd_add_process_set(pair, 2, &id), HVD_ERR_UNSUPPORTED,
                   "hvd_add_process_set with dynamic sets off",
                   "dynamic_process_sets");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    return usage(argv[0], "DYNAMIC.toml STATIC.toml");
  }
  JobOptions options;
  options.process_sets = {{0, 1}, {2, 3}};
  if (run_once(
          "process sets (dynamic)", argv[1], [] { process_sets(true); },
          options)) {
    return 1;
  }
  return run_once(
      "process sets (static)", argv[2], [] { process_sets(false); }, options);
}
