#include "config/validator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <tuple>

namespace bizon {
namespace {

std::string Join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.append(separator);
    out.append(items[i]);
  }
  return out;
}

std::string ChildPath(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string Describe(const Value& value) {
  if (value.is_string()) return fmt::format("'{}'", value.AsString());
  if (value.is_map()) return "a mapping";
  if (value.is_list()) return "a list";
  return fmt::format("{} {}", ToString(value.kind()), value.ToJson());
}

std::string_view TypeName(FieldType type) {
  switch (type) {
    case FieldType::kString:
      return "a string";
    case FieldType::kInteger:
      return "an integer";
    case FieldType::kNumber:
      return "a number";
    case FieldType::kBoolean:
      return "true or false";
    case FieldType::kEnum:
      return "one of the listed values";
    case FieldType::kObject:
      return "a mapping";
    case FieldType::kList:
      return "a list";
    case FieldType::kMap:
      return "a mapping";
    case FieldType::kAny:
      return "a value";
  }
  return "a value";
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  return row[b.size()];
}

class Walker {
 public:
  explicit Walker(ValidationResult& result) : result_(result) {}

  Value Validate(const FieldSpec& spec, const Value& node, const std::string& path) {
    if (node.is_null()) {
      if (!spec.nullable) Error(path, node.mark(), "must not be null");
      return node;
    }
    switch (spec.type) {
      case FieldType::kString:
        if (!node.is_string()) return Mismatch(spec, node, path);
        return node;
      case FieldType::kInteger:
        return ValidateInteger(spec, node, path);
      case FieldType::kNumber:
        return ValidateNumber(spec, node, path);
      case FieldType::kBoolean:
        return ValidateBoolean(spec, node, path);
      case FieldType::kEnum:
        return ValidateEnum(spec, node, path);
      case FieldType::kObject:
        return ValidateObject(spec, node, path);
      case FieldType::kList:
        return ValidateList(spec, node, path);
      case FieldType::kMap:
        return ValidateMap(spec, node, path);
      case FieldType::kAny:
        return ValidateAny(spec, node, path);
    }
    return node;
  }

 private:
  void Error(const std::string& path, SourceMark mark, std::string message) {
    AddDiagnostic(result_, Diagnostic::Severity::kError, path, mark, std::move(message));
  }
  void Warning(const std::string& path, SourceMark mark, std::string message) {
    AddDiagnostic(result_, Diagnostic::Severity::kWarning, path, mark, std::move(message));
  }

  Value Mismatch(const FieldSpec& spec, const Value& node, const std::string& path) {
    Error(path, node.mark(),
          fmt::format("expected {}, got {}", TypeName(spec.type), Describe(node)));
    return node;
  }

  void CheckBounds(const FieldSpec& spec, double value, const Value& node,
                   const std::string& path) {
    if (spec.minimum && value < *spec.minimum) {
      Error(path, node.mark(),
            fmt::format("must be at least {}, got {}", *spec.minimum, node.ToDisplayString()));
    }
    if (spec.maximum && value > *spec.maximum) {
      Error(path, node.mark(),
            fmt::format("must be at most {}, got {}", *spec.maximum, node.ToDisplayString()));
    }
  }

  Value ValidateInteger(const FieldSpec& spec, const Value& node, const std::string& path) {
    Value out = node;
    // 2^63: the first double past int64_t's range. Beyond it (and for inf and nan) a cast is
    // undefined, so such a number is no integer here.
    constexpr double kInt64End = 9223372036854775808.0;
    if (node.kind() == Value::Kind::kDouble) {
      double number = node.AsDouble();
      if (!std::isfinite(number) || std::floor(number) != number || number < -kInt64End ||
          number >= kInt64End) {
        return Mismatch(spec, node, path);
      }
      out = Value(static_cast<int64_t>(number));
    } else if (node.is_string()) {
      // The original's models accept numeric strings for integers; so do we.
      char* end = nullptr;
      errno = 0;
      long long parsed = std::strtoll(node.AsString().c_str(), &end, 10);
      if (node.AsString().empty() || *end != '\0' || errno == ERANGE) {
        return Mismatch(spec, node, path);
      }
      out = Value(static_cast<int64_t>(parsed));
    } else if (!node.is_integer()) {
      return Mismatch(spec, node, path);
    }
    out.set_mark(node.mark());
    CheckBounds(spec, static_cast<double>(out.AsInteger()), node, path);
    return out;
  }

  Value ValidateNumber(const FieldSpec& spec, const Value& node, const std::string& path) {
    Value out = node;
    if (node.is_string()) {
      char* end = nullptr;
      double parsed = std::strtod(node.AsString().c_str(), &end);
      if (node.AsString().empty() || *end != '\0') return Mismatch(spec, node, path);
      out = Value(parsed);
      out.set_mark(node.mark());
    } else if (!node.is_number()) {
      return Mismatch(spec, node, path);
    }
    CheckBounds(spec, out.AsDouble(), node, path);
    return out;
  }

  Value ValidateBoolean(const FieldSpec& spec, const Value& node, const std::string& path) {
    if (node.is_bool()) return node;
    if (node.is_string()) {
      std::string text = node.AsString();
      std::transform(text.begin(), text.end(), text.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      Value out;
      if (text == "true" || text == "yes" || text == "on" || text == "1") out = Value(true);
      if (text == "false" || text == "no" || text == "off" || text == "0") out = Value(false);
      if (!out.is_null()) {
        out.set_mark(node.mark());
        return out;
      }
    }
    if (node.is_integer() && (node.AsInteger() == 0 || node.AsInteger() == 1)) {
      Value out(node.AsInteger() == 1);
      out.set_mark(node.mark());
      return out;
    }
    return Mismatch(spec, node, path);
  }

  Value ValidateEnum(const FieldSpec& spec, const Value& node, const std::string& path) {
    if (node.is_string() && std::find(spec.enum_values.begin(), spec.enum_values.end(),
                                      node.AsString()) != spec.enum_values.end()) {
      return node;
    }
    std::string message =
        fmt::format("expected one of {}, got {}", Join(spec.enum_values, ", "), Describe(node));
    if (node.is_string()) {
      std::string closest = ClosestName(node.AsString(), spec.enum_values);
      if (!closest.empty()) message += fmt::format(" (did you mean '{}'?)", closest);
    }
    Error(path, node.mark(), std::move(message));
    return node;
  }

  Value ValidateObject(const FieldSpec& spec, const Value& node, const std::string& path) {
    if (!node.is_map()) return Mismatch(spec, node, path);
    const std::vector<FieldSpec>* fields = &spec.fields;
    UnknownKeys unknown_keys = spec.unknown_keys;
    if (!spec.variants.empty()) {
      const VariantSpec* variant = SelectVariant(spec, node, path);
      if (variant == nullptr) return node;
      fields = &variant->fields;
      unknown_keys = variant->unknown_keys;
    }

    Value out = Value::EmptyMap();
    out.set_mark(node.mark());
    std::vector<std::string> declared;
    for (const FieldSpec& field : *fields) declared.push_back(field.name);

    for (const FieldSpec& field : *fields) {
      const Value* child = node.Find(field.name);
      std::string child_path = ChildPath(path, field.name);
      if (child == nullptr ||
          (child->is_null() && field.default_value && !field.required && !field.null_is_value)) {
        if (field.required) {
          Error(child_path, node.mark(), "required key is missing");
        } else if (field.default_value) {
          Value filled = Validate(field, *field.default_value, child_path);
          filled.set_mark(node.mark());
          out.Set(field.name, std::move(filled));
        }
        continue;
      }
      if (child->is_null() && field.required) {
        Error(child_path, child->mark(), "required key must not be null");
        continue;
      }
      // A deprecated or no-effect key set to its default (`reset: false`) asks for nothing: no
      // warning.
      bool asks = !(field.default_value && *child == *field.default_value);
      if (!field.deprecated.empty() && asks) {
        Warning(child_path, child->mark(), "deprecated: " + field.deprecated);
      }
      if (!field.no_effect.empty() && asks) {
        Warning(child_path, child->mark(),
                fmt::format("'{}' has no effect: {}", field.name, field.no_effect));
      }
      out.Set(field.name, Validate(field, *child, child_path));
    }

    UndeclaredKeys(node, declared, unknown_keys, path, out);
    return out;
  }

  // The variant the discriminator of `node` names, or the default one; null, reported, when
  // it names none.
  const VariantSpec* SelectVariant(const FieldSpec& spec, const Value& node,
                                   const std::string& path) {
    const Value* tag = node.Find(spec.discriminator);
    std::string tag_text;
    if (tag == nullptr || tag->is_null()) {
      if (spec.default_variant.empty()) {
        Error(ChildPath(path, spec.discriminator), node.mark(), "required key is missing");
        return nullptr;
      }
      tag_text = spec.default_variant;
    } else if (tag->is_string()) {
      tag_text = tag->AsString();
    }
    const VariantSpec* variant = nullptr;
    std::vector<std::string> tags;
    for (const VariantSpec& candidate : spec.variants) {
      tags.push_back(candidate.tag);
      if (candidate.tag == tag_text) variant = &candidate;
    }
    if (variant != nullptr) return variant;
    std::string message = fmt::format("expected one of {}, got {}", Join(tags, ", "),
                                      tag == nullptr ? std::string("nothing") : Describe(*tag));
    std::string closest = ClosestName(tag_text, tags);
    if (!closest.empty()) message += fmt::format(" (did you mean '{}'?)", closest);
    Error(ChildPath(path, spec.discriminator), tag == nullptr ? node.mark() : tag->mark(),
          std::move(message));
    return nullptr;
  }

  // The keys of `node` its spec does not declare: an error, a warning, ignored, or copied to
  // `out`, as `unknown_keys` says.
  void UndeclaredKeys(const Value& node, const std::vector<std::string>& declared,
                      UnknownKeys unknown_keys, const std::string& path, Value& out) {
    for (const auto& [key, child] : node.AsMap()) {
      if (std::find(declared.begin(), declared.end(), key) != declared.end()) continue;
      std::string child_path = ChildPath(path, key);
      std::string closest = ClosestName(key, declared);
      std::string hint = closest.empty() ? "" : fmt::format(" (did you mean '{}'?)", closest);
      switch (unknown_keys) {
        case UnknownKeys::kError:
          Error(
              child_path, child.mark(),
              fmt::format("unknown key '{}'{}; allowed keys: {}", key, hint, Join(declared, ", ")));
          break;
        case UnknownKeys::kWarn:
          Warning(child_path, child.mark(),
                  fmt::format("unknown key '{}' is ignored{}", key, hint));
          break;
        case UnknownKeys::kIgnore:
          break;
        case UnknownKeys::kAllow:
          out.Set(key, child);
          break;
      }
    }
  }

  Value ValidateList(const FieldSpec& spec, const Value& node, const std::string& path) {
    if (!node.is_list()) return Mismatch(spec, node, path);
    if (spec.items.empty()) return node;
    Value::List out;
    const auto& list = node.AsList();
    for (size_t i = 0; i < list.size(); ++i) {
      out.push_back(Validate(spec.items.front(), list[i], fmt::format("{}[{}]", path, i)));
    }
    Value result(std::move(out));
    result.set_mark(node.mark());
    return result;
  }

  Value ValidateMap(const FieldSpec& spec, const Value& node, const std::string& path) {
    if (!node.is_map()) return Mismatch(spec, node, path);
    if (spec.items.empty()) return node;
    Value out = Value::EmptyMap();
    out.set_mark(node.mark());
    for (const auto& [key, child] : node.AsMap()) {
      out.Set(key, Validate(spec.items.front(), child, ChildPath(path, key)));
    }
    return out;
  }

  Value ValidateAny(const FieldSpec& spec, const Value& node, const std::string& path) {
    if (spec.one_of.empty()) return node;
    std::vector<std::string> shapes;
    for (const FieldSpec& alternative : spec.one_of) {
      ValidationResult trial;
      Walker walker(trial);
      Value out = walker.Validate(alternative, node, path);
      if (!trial.has_errors()) {
        for (Diagnostic& diagnostic : trial.diagnostics) result_.diagnostics.push_back(diagnostic);
        return out;
      }
      shapes.push_back(alternative.description.empty() ? std::string(TypeName(alternative.type))
                                                       : alternative.description);
    }
    Error(path, node.mark(),
          fmt::format("expected {}, got {}", Join(shapes, " or "), Describe(node)));
    return node;
  }

  ValidationResult& result_;
};

}  // namespace

std::string Diagnostic::Format(std::string_view file_name) const {
  std::string where =
      mark.line > 0 ? fmt::format("{}:{}", file_name, mark.line) : std::string(file_name);
  if (yaml_path.empty()) return fmt::format("{}: {}", where, message);
  return fmt::format("{}: {}: {}", where, yaml_path, message);
}

bool ValidationResult::has_errors() const {
  return std::any_of(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& d) {
    return d.severity == Diagnostic::Severity::kError;
  });
}

bool ValidationResult::has_warnings() const {
  return std::any_of(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& d) {
    return d.severity == Diagnostic::Severity::kWarning;
  });
}

std::string ValidationResult::ErrorText(std::string_view file_name) const {
  std::string out;
  for (const Diagnostic& diagnostic : diagnostics) {
    if (diagnostic.severity != Diagnostic::Severity::kError) continue;
    if (!out.empty()) out.push_back('\n');
    out += diagnostic.Format(file_name);
  }
  return out;
}

ValidationResult ValidateConfig(const Value& raw, const FieldSpec& spec) {
  ValidationResult result;
  Walker walker(result);
  result.normalized = walker.Validate(spec, raw, "");
  // By line, ties in the order found. Sorted through indices: std::stable_sort's temporary
  // buffer is a deprecated libstdc++ 12 function, which clang-tidy reports.
  std::vector<size_t> order(result.diagnostics.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const std::vector<Diagnostic>& found = result.diagnostics;
  std::sort(order.begin(), order.end(), [&found](size_t a, size_t b) {
    return std::tie(found[a].mark.line, a) < std::tie(found[b].mark.line, b);
  });
  std::vector<Diagnostic> sorted;
  sorted.reserve(order.size());
  for (size_t index : order) sorted.push_back(std::move(result.diagnostics[index]));
  result.diagnostics = std::move(sorted);
  return result;
}

void AddDiagnostic(ValidationResult& result, Diagnostic::Severity severity, std::string yaml_path,
                   SourceMark mark, std::string message) {
  result.diagnostics.push_back({severity, std::move(yaml_path), mark, std::move(message)});
}

std::string ClosestName(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const std::string& candidate : candidates) {
    size_t distance = EditDistance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  // A typo changes a few characters; beyond a third of the word it is another word.
  size_t limit = std::max<size_t>(1, std::max(word.size(), best.size()) / 3);
  if (best_distance == 0 || best_distance > limit) return "";
  return best;
}

}  // namespace bizon
