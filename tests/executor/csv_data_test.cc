// CSV data sets (csv:FILE): headers, label columns, class ids, class names
// and regression targets, quoting checked against Python's csv module, the
// splits, and every bad file by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "executor/data/dataset.h"
#include "executor/npy.h"
#include "tests/common/python_env.h"
#include "tests/common/scratch_dir.h"

namespace amptrain::executor::data {
namespace {

namespace fs = std::filesystem;
using ir::Tensor;

class CsvDataTest : public ::amptrain::testing::ScratchDirTest {
 protected:
  CsvDataTest() : ScratchDirTest("csv") {}
  std::string Write(const std::string& name, const std::string& text) const { return WriteFile(name, text); }
  static StatusOr<Dataset> Load(const std::string& spec, const std::string& split = "train") {
    AMP_ASSIGN_OR_RETURN(DataSpec s, ParseDataSpec("csv:" + spec));
    return LoadDataset(s, split);
  }
};

std::vector<float> Floats(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.num_elements()}; }
std::vector<int64_t> Ints(const Tensor& t) { return {t.data<int64_t>(), t.data<int64_t>() + t.num_elements()}; }

void ExpectError(const StatusOr<Dataset>& r, const std::string& needle) {
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(r.status().ToString().find(needle), std::string::npos) << r.status().ToString();
}

TEST_F(CsvDataTest, HeaderClassNamesAndANamedLabelColumn) {
  // Iris-like: a header, text classes in the last column; then the same with the label first.
  const std::string train = Write("train.csv", "sepal,petal,species\r\n1.5,2,setosa\n3,-4e-1,virginica\n\n5,6,setosa\n");
  const std::string test = Write("test.csv", "sepal,petal,species\n7,8,virginica\n");
  auto tr = Load(train + "," + test), te = Load(train + "," + test, "test");
  ASSERT_TRUE(tr.ok() && te.ok()) << tr.status().ToString() << te.status().ToString();
  EXPECT_EQ(tr->sample_dims, (std::vector<int64_t>{2}));
  EXPECT_EQ(Floats(tr->samples), (std::vector<float>{1.5f, 2, 3, -0.4f, 5, 6}));
  EXPECT_EQ(Ints(tr->labels), (std::vector<int64_t>{0, 1, 0}));  // setosa < virginica
  EXPECT_EQ(tr->num_classes, 2);
  EXPECT_FALSE(tr->classes_from_labels);
  EXPECT_EQ(Ints(te->labels), (std::vector<int64_t>{1}));

  const std::string first = Write("first.csv", "y,a,b\n2,1,1\n0,2,2\n");
  auto f = Load(first + ",label=y");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(Floats(f->samples), (std::vector<float>{1, 1, 2, 2}));
  EXPECT_EQ(Ints(f->labels), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(f->num_classes, 3);
  EXPECT_TRUE(f->classes_from_labels);  // ids bound the class count, as for npy
  auto by_index = Load(first + ",label=0");
  ASSERT_TRUE(by_index.ok());
  EXPECT_TRUE(by_index->labels == f->labels);
}

TEST_F(CsvDataTest, NoHeaderTextLabelsAndRegression) {
  // Text labels in every row do not make the first row a header.
  const std::string named = Write("iris.csv", "5.1,3.5,setosa\n4.9,3.0,setosa\n6.3,3.3,virginica\n");
  auto n = Load(named + "," + named, "test");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->size(), 3);
  EXPECT_EQ(Ints(n->labels), (std::vector<int64_t>{0, 0, 1}));
  // Fractional targets: regression, float32 [N, 1].
  const std::string reg = Write("reg.tsv", "x1\tx2\ty\n1\t2\t0.5\n3\t4\t-1\n");
  auto r = Load(reg + "," + reg, "train");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->num_classes, 0);
  EXPECT_EQ(r->labels.dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Floats(r->labels), (std::vector<float>{0.5f, -1}));
}

// A text label column whose other labels are 5000 distinct numbers: every
// one is a class name (the survey's second pass, past its cap of 4096).
TEST_F(CsvDataTest, ManyNumericNamesInATextLabelColumn) {
  std::string text = "a,label\n1,cat\n";
  for (int i = 0; i < 5000; ++i) text += std::to_string(i) + "," + std::to_string(i) + "\n";
  const std::string f = Write("many.csv", text);
  auto ds = Load(f + "," + f, "test");
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->num_classes, 5001);
  EXPECT_EQ(ds->size(), 5001);
}

TEST_F(CsvDataTest, OneFileSplitsNinetyTen) {
  std::string text = "a,b,label\n";
  for (int i = 0; i < 40; ++i) text += std::to_string(i) + "," + std::to_string(2 * i) + "," + std::to_string(i % 4) + "\n";
  const std::string f = Write("all.csv", text);
  auto tr = Load(f), te = Load(f, "test");
  ASSERT_TRUE(tr.ok() && te.ok());
  EXPECT_EQ(tr->size(), 36);
  EXPECT_EQ(te->size(), 4);
  EXPECT_EQ(tr->num_classes, 4);
  EXPECT_EQ(te->num_classes, 4);
  float sum = 0;
  for (float v : Floats(tr->samples)) sum += v;
  for (float v : Floats(te->samples)) sum += v;
  EXPECT_EQ(sum, 3 * (39 * 40 / 2));  // every row in exactly one part
}

// Quoting as Python's csv module reads it: commas, quotes and newlines inside quotes.
TEST_F(CsvDataTest, QuotingMatchesPythonsCsvModule) {
  namespace py = ::amptrain::testing;
  if (!py::PyHas("numpy")) GTEST_SKIP() << py::PySkip("numpy");
  const std::string f = Write("q.csv",
                              "\"feature, one\",\"two \"\"quoted\"\"\",class\n"
                              "\"1.25\",2,\"big, red\"\n"
                              "3, 4 ,\"multi\nline\"\n"
                              "\"5\",\"6\",\"big, red\"\n");
  const std::string cmd = py::Py() + "-c \"import csv, numpy as np; r = list(csv.reader(open('" + f +
                          "', newline='')))[1:]; names = sorted({x[2] for x in r}); "
                          "np.save('" + (dir_ / "x.npy").string() + "', np.array([[float(v) for v in x[:2]] for x in r], np.float32)); "
                          "np.save('" + (dir_ / "y.npy").string() + "', np.array([names.index(x[2]) for x in r], np.int64))\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto ds = Load(f + "," + f, "test");
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  auto x = ReadNpy((dir_ / "x.npy").string()), y = ReadNpy((dir_ / "y.npy").string());
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_TRUE(ds->samples == *x);
  EXPECT_TRUE(ds->labels == *y);
  EXPECT_EQ(ds->num_classes, 2);
}

TEST_F(CsvDataTest, BadFilesAreNamed) {
  ExpectError(Load(Write("empty.csv", "")), "has no rows");
  ExpectError(Load(Write("head.csv", "a,b\n")), "has a header and no data rows");
  ExpectError(Load(Write("one.csv", "1\n2\n")), "expected features and a label");
  ExpectError(Load(Write("ragged.csv", "a,b,c\n1,2,3\n4,5\n")), "data row 2 has 2 fields, the header 3");
  ExpectError(Load(Write("text.csv", "a,b,y\n1,x,0\n2,3,1\n")), "data row 1 column 'b': 'x' is not a finite number");
  ExpectError(Load(Write("nan.csv", "a,y\n1,0\nnan,1\n")), "data row 2 column 'a': 'nan' is not a finite number");
  ExpectError(Load(Write("big.csv", "a,y\n1,0\n3.5e38,1\n")), "data row 2 column 0: 3.5e38 is outside float32's range");
  ExpectError(Load(Write("gap.csv", "a,y\n1,0\n,1\n")), "data row 2 column 'a': '' is not a finite number");
  ExpectError(Load(Write("open.csv", "a,y\n\"1,0\n2,1\n")), "quoted field opened on line 2 never closes");
  ExpectError(Load(Write("nul.csv", std::string("a,y\n1,0\n2\0,1\n", 12))), "holds a NUL byte");
  const std::string ok = Write("ok.csv", "a,y\n1,cat\n2,dog\n");
  ExpectError(Load(ok + ",label=z"), "has no column 'z' (columns: a, y)");
  ExpectError(Load(ok + "," + Write("t.csv", "a,y\n1,emu\n"), "test"), "the class 'emu' is not among");
  ExpectError(Load(Write("ids.csv", "a,y\n1,0\n2,1\n") + "," + Write("t2.csv", "a,y\n1,-1\n"), "test"),
              "the label '-1' is not a class id");
  ExpectError(Load(ok + "," + Write("w.csv", "a,b,y\n1,2,cat\n"), "test"), "has 3 columns");
  ExpectError(Load(ok + ",label=y,label=a"), "label= is given twice");
  ExpectError(Load((dir_ / "missing.csv").string()), "missing.csv");
  ExpectError(Load(dir_.string()), "is a folder");
  auto spec = ParseDataSpec("csv");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().ToString().find("csv needs a path, e.g. 'csv:data.csv'"), std::string::npos);
}

}  // namespace
}  // namespace amptrain::executor::data
