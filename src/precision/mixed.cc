#include "precision/mixed.h"

#include <map>
#include <set>

#include <fmt/format.h>

namespace ortgpu::precision {
namespace {

// Names of the nodes of `g` that `outputs` depend on.
std::set<std::string> Ancestors(const ::onnx::GraphProto& g, const std::set<std::string>& outputs) {
  std::map<std::string, const ::onnx::NodeProto*> producer;
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) producer[o] = &n;
  }
  std::set<std::string> seen_values, nodes;
  std::vector<std::string> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    const std::string v = stack.back();
    stack.pop_back();
    if (!seen_values.insert(v).second) continue;
    auto it = producer.find(v);
    if (it == producer.end()) continue;
    nodes.insert(it->second->name());
    for (const auto& i : it->second->input()) stack.push_back(i);
  }
  return nodes;
}

std::set<std::string> FailingOutputs(const DeviationReport& d, const PrecisionBudget& budget) {
  std::set<std::string> out;
  for (const auto& o : d.outputs) {
    if (!BudgetViolations(DeviationReport{{o}}, budget).empty()) out.insert(o.name);
  }
  return out;
}

}  // namespace

Expected<Evaluation> Evaluate(const ::onnx::ModelProto& fp32, const ConvertOptions& options,
                              const std::vector<Tensor>& inputs, const std::vector<Tensor>& reference,
                              ModelRunner& runner, const PrecisionBudget& budget) {
  Evaluation e;
  e.model = fp32;
  ORTGPU_ASSIGN_OR_RETURN(e.report, ConvertToFloat16(e.model, options));
  ORTGPU_ASSIGN_OR_RETURN(auto outputs, runner.Run(e.model, inputs));
  e.deviation = CompareDeviation(outputs, reference);
  e.violations = BudgetViolations(e.deviation, budget);
  return e;
}

Expected<MixedSearchResult> SearchMixedPrecision(const ::onnx::ModelProto& fp32, const ConvertOptions& options,
                                                 const std::vector<Tensor>& inputs,
                                                 const std::vector<Tensor>& reference, ModelRunner& runner,
                                                 const MixedSearchOptions& search) {
  MixedSearchResult result;
  ConvertOptions kept = options;
  auto evaluate = [&](const ConvertOptions& o) {
    ++result.evaluations;
    return Evaluate(fp32, o, inputs, reference, runner, search.budget);
  };
  ORTGPU_ASSIGN_OR_RETURN(result.final, evaluate(kept));
  result.fp16_violations = result.final.violations;
  std::map<std::string, std::string> op_of;
  for (const auto& n : fp32.graph().node()) op_of[n.name()] = n.op_type();
  // Converted names come from the conversion, which names unnamed nodes
  // the same way every time; look their op types up there.
  //
  // After a culprit at index c of the candidates, the next round's list is
  // the same one without it (when the same outputs fail), and its first c
  // in float16 with the rest in float32 is the model the last round
  // measured within the budget (prefix(c), the culprit then float32 too):
  // the next bisection starts there, not at 0, and skips the all-float32
  // check. BERT-base's culprits lie in its last layers, so each one after
  // the first costs the few halvings of the nodes after the one before.
  std::vector<std::string> resume_candidates;  // the list the next round expects
  size_t resume_good = 0;                      // prefix(resume_good) of it is within the budget
  while (!result.final.violations.empty()) {
    if (result.evaluations >= search.max_evaluations) {
      result.note = fmt::format("stopped after {} evaluations (--max-evaluations) with the budget still broken",
                                result.evaluations);
      return result;
    }
    const auto failing = FailingOutputs(result.final.deviation, search.budget);
    const auto feeding = Ancestors(result.final.model.graph(), failing);
    std::vector<std::string> candidates;
    for (const auto& name : result.final.report.converted) {
      if (feeding.count(name)) candidates.push_back(name);
    }
    if (candidates.empty()) candidates = result.final.report.converted;
    if (candidates.empty()) {
      result.note = "no float16 node is left to keep in float32, and the budget is still broken: the difference "
                    "comes from the model's inputs or outputs in float16 (try --keep-io-types=true)";
      return result;
    }
    // prefix(k): candidates[0, k) in float16, the rest in float32.
    auto prefix = [&](size_t k) {
      ConvertOptions o = kept;
      for (size_t i = k; i < candidates.size(); ++i) o.node_block_list.emplace(candidates[i], "searching");
      return o;
    };
    size_t lo = 0, hi = candidates.size();
    if (candidates == resume_candidates && resume_good < candidates.size()) {
      lo = resume_good;
    } else {
      ORTGPU_ASSIGN_OR_RETURN(Evaluation none, evaluate(prefix(0)));
      if (!none.violations.empty()) {
        result.note = "keeping every candidate in float32 still breaks the budget (" + none.violations.front() +
                      "); the float32 reference and the converted model differ elsewhere";
        return result;
      }
    }
    std::vector<std::string> at_hi = result.final.violations;
    while (hi - lo > 1 && result.evaluations < search.max_evaluations) {
      const size_t mid = lo + (hi - lo) / 2;
      ORTGPU_ASSIGN_OR_RETURN(Evaluation e, evaluate(prefix(mid)));
      if (e.violations.empty()) {
        lo = mid;
      } else {
        hi = mid;
        at_hi = e.violations;
      }
    }
    const std::string culprit = candidates[hi - 1];
    resume_candidates.clear();
    if (hi - lo == 1) {  // the bisection ended: prefix(lo) measured within the budget
      resume_candidates = candidates;
      resume_candidates.erase(resume_candidates.begin() + static_cast<std::ptrdiff_t>(lo));
      resume_good = lo;
    }
    const std::string reason = "float16 here breaks the budget: " + at_hi.front();
    kept.node_block_list[culprit] = reason;
    result.kept_for_accuracy.push_back({culprit, op_of.count(culprit) ? op_of[culprit] : "", reason});
    ORTGPU_ASSIGN_OR_RETURN(result.final, evaluate(kept));
  }
  result.within_budget = true;
  return result;
}

}  // namespace ortgpu::precision
