// Tabular data: CSV (and TSV) files of numeric features and one label column.
//
// A file is read whole and scanned twice, field by field, without keeping
// its records: the first pass settles the header, the row count and the
// label column (all that a test file's classes need from the training
// file), the second converts the features straight into the tensor.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <string_view>

#include <spdlog/spdlog.h>

#include "executor/data/byte_source.h"
#include "executor/data/loaders.h"
#include "ir/file_io.h"

namespace amptrain::executor::data {

using ir::DType;
using ir::Tensor;

namespace {

std::string_view Trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string_view::npos ? std::string_view() : s.substr(a, b - a + 1);
}

// A finite number filling the whole (trimmed) field; a leading '+' is allowed.
bool ParseNumber(std::string_view field, double* out) {
  std::string_view t = Trim(field);
  if (!t.empty() && t[0] == '+') t.remove_prefix(1);
  if (t.empty()) return false;
  double v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// RFC 4180 records of a text: fields split on the delimiter; a field whose
// first non-blank character is a double quote runs to the matching quote and
// may hold delimiters, newlines and "" for a quote; \r\n or \n ends a record;
// blank lines are skipped; a UTF-8 byte-order mark is dropped. The views of
// a record are valid until the next call.
class RecordScanner {
 public:
  RecordScanner(std::string_view text, char delimiter, const std::string& file)
      : text_(text), delimiter_(delimiter), file_(file) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    for (unsigned char ch : {static_cast<unsigned char>(delimiter), static_cast<unsigned char>('\n'),
                             static_cast<unsigned char>('\r'), static_cast<unsigned char>('\0')})
      stop_[ch] = true;
  }

  // The next record into *fields; false at the end of the text.
  StatusOr<bool> Next(std::vector<std::string_view>* fields) {
    while (pos_ < text_.size()) {
      record_line_ = line_;
      fields->clear();
      bool any_quoted = false;
      while (true) {
        const size_t k = fields->size();
        if (unquoted_.size() <= k) unquoted_.emplace_back();
        AMP_ASSIGN_OR_RETURN(bool quoted, Field(&unquoted_[k], fields));
        any_quoted = any_quoted || quoted;
        if (pos_ < text_.size() && text_[pos_] == delimiter_) {
          ++pos_;
          continue;
        }
        // The end of the record: a newline (\n or \r\n) or the end of the text.
        if (pos_ < text_.size()) pos_ += text_[pos_] == '\r' ? 2 : 1;
        ++line_;
        break;
      }
      const bool blank = fields->size() == 1 && !any_quoted && Trim((*fields)[0]).empty();
      if (!blank) return true;
    }
    return false;
  }
  int64_t record_line() const { return record_line_; }

 private:
  bool AtRecordEnd(size_t i) const {
    return text_[i] == '\n' || (text_[i] == '\r' && i + 1 < text_.size() && text_[i + 1] == '\n');
  }

  // One field from pos_, up to (not over) its delimiter or record end.
  StatusOr<bool> Field(std::string* storage, std::vector<std::string_view>* fields) {
    size_t i = pos_;
    while (i < text_.size() && (text_[i] == ' ' || text_[i] == '\t') && text_[i] != delimiter_) ++i;
    if (i < text_.size() && text_[i] == '"') {
      const int64_t opened = line_;
      storage->clear();
      for (++i;; ++i) {
        if (i >= text_.size())
          return InvalidArgument("csv: '", file_, "': the quoted field opened on line ", opened, " never closes");
        const char ch = text_[i];
        if (ch == '"') {
          if (i + 1 < text_.size() && text_[i + 1] == '"') {
            storage->push_back('"');
            ++i;
            continue;
          }
          ++i;
          break;
        }
        if (ch == '\n') ++line_;
        if (ch == '\0') return Nul();
        storage->push_back(ch);
      }
      // Text after the closing quote belongs to the field, as Python's csv reads it.
      for (; i < text_.size() && text_[i] != delimiter_ && !AtRecordEnd(i); ++i) {
        if (text_[i] == '\0') return Nul();
        storage->push_back(text_[i]);
      }
      pos_ = i;
      fields->push_back(*storage);
      return true;
    }
    // Unquoted: up to the next delimiter, newline, \r or NUL (one table lookup a byte).
    i = pos_;
    while (true) {
      while (i < text_.size() && !stop_[static_cast<unsigned char>(text_[i])]) ++i;
      if (i < text_.size() && text_[i] == '\0') return Nul();
      if (i < text_.size() && text_[i] == '\r' && !AtRecordEnd(i)) {
        ++i;  // a lone \r is part of the field
        continue;
      }
      break;
    }
    fields->push_back(text_.substr(pos_, i - pos_));
    pos_ = i;
    return false;
  }

  Status Nul() const { return InvalidArgument("csv: '", file_, "' line ", line_, " holds a NUL byte: not a text file"); }

  std::string_view text_;
  char delimiter_;
  const std::string& file_;
  size_t pos_ = 0;
  int64_t line_ = 1, record_line_ = 1;
  // Per field index: the unescaped text of a quoted field. A deque, so that
  // growing it never moves the strings that earlier fields' views point into.
  std::deque<std::string> unquoted_;
  bool stop_[256] = {};                // the bytes that end an unquoted field
};

// The label column: `label` names a header column or gives a 0-based index;
// by default the last column.
StatusOr<size_t> LabelColumn(const std::vector<std::string>& header, size_t columns, const std::string& label,
                             const std::string& file) {
  if (label.empty()) return columns - 1;
  for (size_t c = 0; c < header.size(); ++c)
    if (header[c] == label) return c;
  if (label.find_first_not_of("0123456789") == std::string::npos && label.size() < 10) {
    const size_t c = std::stoul(label);
    if (c < columns) return c;
  }
  std::string names;
  for (const std::string& h : header) names += (names.empty() ? "" : ", ") + h;
  return InvalidArgument("csv: '", file, "' has no column '", label, "' (",
                         header.empty() ? "no header; give a 0-based column index" : "columns: " + names, ")");
}

enum class LabelKind { kClassIds, kClassNames, kRegression };

// What a label column holds: non-negative integers (class ids), other numbers
// (regression targets), or any text (class names: then every field, numbers
// included, is a name).
struct Labels {
  LabelKind kind = LabelKind::kClassIds;
  std::vector<std::string> names;  // kClassNames: the classes, sorted
  int64_t max_id = -1;             // kClassIds: the largest
};

// Reads the label fields of one pass and decides their kind.
class LabelSurvey {
 public:
  void Add(std::string_view raw) {
    const std::string_view field = Trim(raw);
    double v;
    if (!ParseNumber(field, &v)) {
      text_ = true;
      if (names_.find(field) == names_.end()) names_.emplace(field);
      return;
    }
    // Numbers are names too if the column turns out to be text: kept while they are few.
    if (numbers_.find(field) == numbers_.end()) {
      if (!capped_ || numbers_.size() < kMaxNumberNames) numbers_.emplace(field);
      else numbers_overflowed_ = true;
    }
    if (v < 0 || v != std::floor(v) || v > 1e9 || field.find_first_of(".eE") != std::string_view::npos) ids_ = false;
    else max_id_ = std::max(max_id_, static_cast<int64_t>(v));
  }
  // True when a text column needs one more pass for its numeric names (Add them all again).
  bool NeedsAnotherPass() const { return text_ && numbers_overflowed_; }
  // The pass again, keeping every number this time.
  void Restart() {
    numbers_.clear();
    numbers_overflowed_ = false;
    capped_ = false;
  }
  Labels Result() const {
    Labels l;
    if (text_) {
      l.kind = LabelKind::kClassNames;
      std::set<std::string, std::less<>> all = names_;
      all.insert(numbers_.begin(), numbers_.end());
      l.names.assign(all.begin(), all.end());
    } else {
      l.kind = ids_ ? LabelKind::kClassIds : LabelKind::kRegression;
      l.max_id = max_id_;
    }
    return l;
  }

 private:
  static constexpr size_t kMaxNumberNames = 4096;
  bool text_ = false, ids_ = true, numbers_overflowed_ = false, capped_ = true;
  int64_t max_id_ = -1;
  std::set<std::string, std::less<>> names_, numbers_;
};

// What the first pass learns of a file.
struct Survey {
  std::string text;
  char delimiter = ',';
  std::vector<std::string> header;  // empty without a header row
  size_t columns = 0;
  int64_t rows = 0;                 // data rows
  size_t label_column = 0;
  Labels labels;
};

// Calls fn(row, fields) for every data row of a surveyed file.
template <class Fn>
Status ForEachRow(const Survey& s, const std::string& file, Fn fn) {
  RecordScanner scan(s.text, s.delimiter, file);
  std::vector<std::string_view> fields;
  bool skip_header = !s.header.empty();
  for (int64_t row = 0;;) {
    AMP_ASSIGN_OR_RETURN(bool more, scan.Next(&fields));
    if (!more) return Status::Ok();
    if (skip_header) {
      skip_header = false;
      continue;
    }
    AMP_RETURN_IF_ERROR(fn(row++, fields));
  }
}

// One pass: the header, the row count (every row checked for its field
// count) and the label column's kind, with `label` choosing the column.
StatusOr<Survey> SurveyFile(const std::string& file, const std::string& label) {
  Survey s;
  AMP_ASSIGN_OR_RETURN(s.text, ir::ReadRegularFile(file, static_cast<int64_t>(kMaxDataBytes), "csv file"));
  s.delimiter = file.size() > 4 && file.compare(file.size() - 4, 4, ".tsv") == 0 ? '\t' : ',';
  RecordScanner scan(s.text, s.delimiter, file);
  std::vector<std::string_view> fields;
  AMP_ASSIGN_OR_RETURN(bool any, scan.Next(&fields));
  if (!any) return InvalidArgument("csv: '", file, "' has no rows");
  const std::vector<std::string> first(fields.begin(), fields.end());
  AMP_ASSIGN_OR_RETURN(bool second, scan.Next(&fields));
  // The first row is a header when none of its fields is a number, or when
  // one of them is text above a number in the next row (a text label column
  // is text in every row, so it alone does not make a header).
  double unused;
  bool all_text = true, text_over_number = false;
  for (size_t c = 0; c < first.size(); ++c) {
    const bool number = ParseNumber(first[c], &unused);
    all_text = all_text && !number;
    if (!number && second && c < fields.size() && ParseNumber(fields[c], &unused)) text_over_number = true;
  }
  if (all_text || text_over_number)
    for (const std::string& h : first) s.header.emplace_back(Trim(h));
  s.columns = first.size();
  if (s.columns < 2)
    return InvalidArgument("csv: '", file, "' has ", s.columns, " column; expected features and a label");
  AMP_ASSIGN_OR_RETURN(s.label_column, LabelColumn(s.header, s.columns, label, file));
  LabelSurvey labels;
  auto row = [&](const std::vector<std::string_view>& f) -> Status {
    ++s.rows;
    if (f.size() != s.columns)
      return InvalidArgument("csv: '", file, "' data row ", s.rows, " has ", f.size(), " fields, the ",
                             s.header.empty() ? "first row " : "header ", s.columns);
    labels.Add(f[s.label_column]);
    return Status::Ok();
  };
  if (s.header.empty()) AMP_RETURN_IF_ERROR(row(std::vector<std::string_view>(first.begin(), first.end())));
  for (bool more = second; more;) {
    AMP_RETURN_IF_ERROR(row(fields));
    AMP_ASSIGN_OR_RETURN(more, scan.Next(&fields));
  }
  if (s.rows == 0) return InvalidArgument("csv: '", file, "' has a header and no data rows");
  if (labels.NeedsAnotherPass()) {
    labels.Restart();
    AMP_RETURN_IF_ERROR(ForEachRow(s, file, [&](int64_t, const std::vector<std::string_view>& f) {
      labels.Add(f[s.label_column]);
      return Status::Ok();
    }));
  }
  s.labels = labels.Result();
  return s;
}

StatusOr<Dataset> ToDataset(const Survey& s, size_t label_column, const Labels& labels, const std::string& file) {
  const int64_t n = s.rows;
  const auto features = static_cast<int64_t>(s.columns) - 1;
  Dataset ds;
  ds.sample_dims = {features};
  AMP_ASSIGN_OR_RETURN(ds.samples, Tensor::Zeros(DType::kFloat32, {n, features}));
  if (labels.kind == LabelKind::kRegression) {
    AMP_ASSIGN_OR_RETURN(ds.labels, Tensor::Zeros(DType::kFloat32, {n, 1}));
  } else {
    AMP_ASSIGN_OR_RETURN(ds.labels, Tensor::Zeros(DType::kInt64, {n}));
  }
  std::map<std::string, int64_t, std::less<>> class_index;
  for (size_t i = 0; i < labels.names.size(); ++i) class_index[labels.names[i]] = static_cast<int64_t>(i);
  float* x = ds.samples.data<float>();
  int64_t max_id = -1;
  constexpr double kFloatMax = std::numeric_limits<float>::max();
  AMP_RETURN_IF_ERROR(ForEachRow(s, file, [&](int64_t r, const std::vector<std::string_view>& fields) -> Status {
    float* row = x + r * features;
    for (size_t c = 0; c < fields.size(); ++c) {
      double v = 0;
      const bool number = ParseNumber(fields[c], &v);
      if (c != label_column) {
        if (!number) {
          const std::string column = s.header.empty() ? "column " + std::to_string(c) : "column '" + s.header[c] + "'";
          return InvalidArgument("csv: '", file, "' data row ", r + 1, " ", column, ": '", Trim(fields[c]),
                                 "' is not a finite number (feature columns are numeric)");
        }
        if (std::fabs(v) > kFloatMax)
          return InvalidArgument("csv: '", file, "' data row ", r + 1, " column ", c, ": ", Trim(fields[c]),
                                 " is outside float32's range");
        *row++ = static_cast<float>(v);
        continue;
      }
      const std::string_view field = Trim(fields[c]);
      switch (labels.kind) {
        case LabelKind::kRegression:
          if (!number || std::fabs(v) > kFloatMax)
            return InvalidArgument("csv: '", file, "' data row ", r + 1, ": the label '", field,
                                   "' is not a number within float32's range");
          ds.labels.data<float>()[r] = static_cast<float>(v);
          break;
        case LabelKind::kClassIds:
          if (!number || v < 0 || v != std::floor(v) || v > 1e9)
            return InvalidArgument("csv: '", file, "' data row ", r + 1, ": the label '", field,
                                   "' is not a class id (an integer >= 0, as in the training file)");
          ds.labels.data<int64_t>()[r] = static_cast<int64_t>(v);
          max_id = std::max(max_id, static_cast<int64_t>(v));
          break;
        case LabelKind::kClassNames: {
          auto it = class_index.find(field);
          if (it == class_index.end())
            return InvalidArgument("csv: '", file, "' data row ", r + 1, ": the class '", field,
                                   "' is not among the training file's classes");
          ds.labels.data<int64_t>()[r] = it->second;
          break;
        }
      }
    }
    return Status::Ok();
  }));
  if (labels.kind == LabelKind::kClassNames) ds.num_classes = static_cast<int64_t>(labels.names.size());
  if (labels.kind == LabelKind::kClassIds) {
    ds.num_classes = std::max(max_id, labels.max_id) + 1;
    ds.classes_from_labels = true;
  }
  return ds;
}

}  // namespace

StatusOr<Dataset> LoadCsvFiles(const std::vector<std::string>& files, const std::string& label,
                               const std::string& split) {
  if (files.empty() || files.size() > 2)
    return InvalidArgument("csv: expected FILE.csv or TRAIN.csv,TEST.csv (and optionally label=COLUMN), got ",
                           files.size(), " files");
  AMP_ASSIGN_OR_RETURN(Survey train, SurveyFile(files[0], label));
  const size_t column = train.label_column;
  if (train.labels.kind == LabelKind::kClassNames && split == "train")
    spdlog::info("csv: classes (label: name) {}", ClassList(train.labels.names));
  if (files.size() == 1) {
    AMP_ASSIGN_OR_RETURN(Dataset all, ToDataset(train, column, train.labels, files[0]));
    return TakeSplit(all, split);  // the class count of the whole file, in both parts
  }
  if (split == "train") return ToDataset(train, column, train.labels, files[0]);
  train.text.clear();
  // The test file's label column: the training file's by header name when both have headers, else by index.
  const std::string test_label = train.header.empty() ? std::to_string(column) : train.header[column];
  StatusOr<Survey> test = SurveyFile(files[1], test_label);
  if (!test.ok() && !train.header.empty()) test = SurveyFile(files[1], std::to_string(column));
  if (!test.ok()) return test.status();
  if (test->columns != train.columns)
    return InvalidArgument("csv: '", files[1], "' has ", test->columns, " columns, '", files[0], "' ", train.columns);
  if (test->label_column != column)
    return InvalidArgument("csv: the label column '", train.header[column], "' is column ", test->label_column,
                           " of '", files[1], "' but column ", column, " of '", files[0], "'");
  return ToDataset(*test, column, train.labels, files[1]);  // ids: the class count bounded by both files' largest
}

}  // namespace amptrain::executor::data
