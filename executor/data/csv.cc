// Tabular data: CSV (and TSV) files of numeric features and one label column.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "executor/data/byte_source.h"
#include "executor/data/loaders.h"
#include "ir/file_io.h"

namespace amptrain::executor::data {

using ir::DType;
using ir::Tensor;

namespace {

using Record = std::vector<std::string>;

// Records of RFC 4180 text: fields split on `delimiter`, double-quoted fields
// may hold delimiters, newlines and "" for a quote; \r\n or \n ends a record;
// blank lines are skipped; a UTF-8 byte-order mark is dropped.
StatusOr<std::vector<Record>> ParseRecords(const std::string& text, char delimiter, const std::string& file) {
  std::vector<Record> records;
  Record record;
  std::string field;
  bool quoted = false, field_was_quoted = false;
  int64_t line = 1, quote_line = 0;
  size_t i = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  auto end_record = [&]() {
    record.push_back(std::move(field));
    field.clear();
    const bool blank = record.size() == 1 && record[0].find_first_not_of(" \t") == std::string::npos &&
                       !field_was_quoted;
    if (!blank) records.push_back(std::move(record));
    record.clear();
    field_was_quoted = false;
  };
  for (; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (ch == '\n') ++line;
        field.push_back(ch);
      }
    } else if (ch == '"' && field.find_first_not_of(" \t") == std::string::npos) {
      quoted = field_was_quoted = true;
      quote_line = line;
      field.clear();
    } else if (ch == delimiter) {
      record.push_back(std::move(field));
      field.clear();
    } else if (ch == '\n' || (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      if (ch == '\r') ++i;
      end_record();
      ++line;
    } else if (ch == '\0') {
      return InvalidArgument("csv: '", file, "' line ", line, " holds a NUL byte: not a text file");
    } else {
      field.push_back(ch);
    }
  }
  if (quoted) return InvalidArgument("csv: '", file, "': the quoted field opened on line ", quote_line, " never closes");
  if (!field.empty() || !record.empty()) end_record();
  return records;
}

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// A finite number filling the whole (trimmed) field.
bool ParseNumber(const std::string& field, double* out) {
  const std::string t = Trim(field);
  if (t.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

struct Table {
  std::vector<std::string> header;  // empty without a header row
  std::vector<Record> rows;
};

StatusOr<Table> ReadTable(const std::string& file) {
  AMP_ASSIGN_OR_RETURN(std::string text, ir::ReadRegularFile(file, static_cast<int64_t>(kMaxDataBytes), "csv file"));
  const bool tsv = file.size() > 4 && file.compare(file.size() - 4, 4, ".tsv") == 0;
  AMP_ASSIGN_OR_RETURN(std::vector<Record> records, ParseRecords(text, tsv ? '\t' : ',', file));
  if (records.empty()) return InvalidArgument("csv: '", file, "' has no rows");
  Table t;
  // The first row is a header when none of its fields is a number, or when
  // one of them is text above a number in the next row (a text label column
  // is text in every row, so it alone does not make a header).
  double unused;
  bool header = true, text_over_number = false;
  for (size_t c = 0; c < records[0].size(); ++c) {
    const bool number = ParseNumber(records[0][c], &unused);
    header = header && !number;
    if (!number && records.size() > 1 && c < records[1].size() && ParseNumber(records[1][c], &unused))
      text_over_number = true;
  }
  if (header || text_over_number)
    for (const std::string& h : records[0]) t.header.push_back(Trim(h));
  t.rows.assign(records.begin() + (t.header.empty() ? 0 : 1), records.end());
  if (t.rows.empty()) return InvalidArgument("csv: '", file, "' has a header and no data rows");
  const size_t columns = t.header.empty() ? t.rows[0].size() : t.header.size();
  if (columns < 2) return InvalidArgument("csv: '", file, "' has ", columns, " column; expected features and a label");
  for (size_t r = 0; r < t.rows.size(); ++r)
    if (t.rows[r].size() != columns)
      return InvalidArgument("csv: '", file, "' data row ", r + 1, " has ", t.rows[r].size(), " fields, the ",
                             t.header.empty() ? "first row " : "header ", columns);
  return t;
}

// The label column: `label` names a header column or gives a 0-based index;
// by default the last column.
StatusOr<size_t> LabelColumn(const Table& t, const std::string& label, const std::string& file) {
  const size_t columns = t.header.empty() ? t.rows[0].size() : t.header.size();
  if (label.empty()) return columns - 1;
  for (size_t c = 0; c < t.header.size(); ++c)
    if (t.header[c] == label) return c;
  if (!label.empty() && label.find_first_not_of("0123456789") == std::string::npos && label.size() < 10) {
    const size_t c = std::stoul(label);
    if (c < columns) return c;
  }
  std::string names;
  for (const std::string& h : t.header) names += (names.empty() ? "" : ", ") + h;
  return InvalidArgument("csv: '", file, "' has no column '", label, "' (",
                         t.header.empty() ? "no header; give a 0-based column index" : "columns: " + names, ")");
}

enum class LabelKind { kClassIds, kClassNames, kRegression };

struct Labels {
  LabelKind kind = LabelKind::kClassIds;
  std::vector<std::string> names;  // kClassNames: the classes, sorted
};

// What the label column of the training file holds: non-negative integers
// (class ids), other numbers (regression targets), or text (class names).
Labels LabelsOf(const Table& t, size_t column) {
  Labels l;
  bool all_numbers = true, all_ids = true;
  std::set<std::string> names;
  for (const Record& r : t.rows) {
    double v;
    const std::string field = Trim(r[column]);
    if (!ParseNumber(field, &v)) {
      all_numbers = false;
      names.insert(field);
      continue;
    }
    if (v < 0 || v != std::floor(v) || field.find_first_of(".eE") != std::string::npos) all_ids = false;
  }
  if (!all_numbers) {
    l.kind = LabelKind::kClassNames;
    for (const Record& r : t.rows) names.insert(Trim(r[column]));
    l.names.assign(names.begin(), names.end());
  } else {
    l.kind = all_ids ? LabelKind::kClassIds : LabelKind::kRegression;
  }
  return l;
}

StatusOr<Dataset> ToDataset(const Table& t, size_t label_column, const Labels& labels, const std::string& file) {
  const auto n = static_cast<int64_t>(t.rows.size());
  const auto features = static_cast<int64_t>(t.rows[0].size()) - 1;
  Dataset ds;
  ds.sample_dims = {features};
  AMP_ASSIGN_OR_RETURN(ds.samples, Tensor::Zeros(DType::kFloat32, {n, features}));
  float* x = ds.samples.data<float>();
  std::map<std::string, int64_t> class_index;
  for (size_t i = 0; i < labels.names.size(); ++i) class_index[labels.names[i]] = static_cast<int64_t>(i);
  if (labels.kind == LabelKind::kRegression) {
    AMP_ASSIGN_OR_RETURN(ds.labels, Tensor::Zeros(DType::kFloat32, {n, 1}));
  } else {
    AMP_ASSIGN_OR_RETURN(ds.labels, Tensor::Zeros(DType::kInt64, {n}));
  }
  int64_t max_id = -1;
  for (int64_t r = 0; r < n; ++r) {
    const Record& rec = t.rows[static_cast<size_t>(r)];
    int64_t f = 0;
    for (size_t c = 0; c < rec.size(); ++c) {
      double v = 0;
      const bool number = ParseNumber(rec[c], &v);
      if (c != label_column) {
        if (!number) {
          const std::string column = t.header.empty() ? "column " + std::to_string(c) : "column '" + t.header[c] + "'";
          return InvalidArgument("csv: '", file, "' data row ", r + 1, " ", column, ": '", Trim(rec[c]),
                                 "' is not a finite number (feature columns are numeric)");
        }
        if (std::fabs(v) > std::numeric_limits<float>::max())
          return InvalidArgument("csv: '", file, "' data row ", r + 1, " column ", c, ": ", Trim(rec[c]),
                                 " is outside float32's range");
        x[r * features + f++] = static_cast<float>(v);
        continue;
      }
      const std::string field = Trim(rec[c]);
      switch (labels.kind) {
        case LabelKind::kRegression:
          if (!number || std::fabs(v) > std::numeric_limits<float>::max())
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
  }
  if (labels.kind == LabelKind::kClassNames) ds.num_classes = static_cast<int64_t>(labels.names.size());
  if (labels.kind == LabelKind::kClassIds) {
    ds.num_classes = max_id + 1;
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
  AMP_ASSIGN_OR_RETURN(Table train, ReadTable(files[0]));
  AMP_ASSIGN_OR_RETURN(size_t column, LabelColumn(train, label, files[0]));
  const Labels labels = LabelsOf(train, column);
  if (files.size() == 1) {
    AMP_ASSIGN_OR_RETURN(Dataset all, ToDataset(train, column, labels, files[0]));
    return TakeSplit(all, split);  // the class count of the whole file, in both parts
  }
  if (split == "train") return ToDataset(train, column, labels, files[0]);
  AMP_ASSIGN_OR_RETURN(Table test, ReadTable(files[1]));
  if (test.rows[0].size() != train.rows[0].size())
    return InvalidArgument("csv: '", files[1], "' has ", test.rows[0].size(), " columns, '", files[0], "' ",
                           train.rows[0].size());
  size_t test_column = column;
  if (!train.header.empty() && !test.header.empty()) {
    AMP_ASSIGN_OR_RETURN(test_column, LabelColumn(test, train.header[column], files[1]));
  }
  if (test_column != column)
    return InvalidArgument("csv: the label column '", train.header[column], "' is column ", test_column, " of '",
                           files[1], "' but column ", column, " of '", files[0], "'");
  AMP_ASSIGN_OR_RETURN(Dataset ds, ToDataset(test, column, labels, files[1]));
  if (labels.kind == LabelKind::kClassIds)  // ids bound the class count: the larger of the two files'
    for (const Record& r : train.rows) {
      double v = 0;
      ParseNumber(r[column], &v);
      ds.num_classes = std::max(ds.num_classes, static_cast<int64_t>(v) + 1);
    }
  return ds;
}

}  // namespace amptrain::executor::data
