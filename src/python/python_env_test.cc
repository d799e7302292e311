#include "python/python_env.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace bizon::python {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the system's temporary directory, removed with the fixture.
class PythonEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("bizon-python-env-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // A virtualenv layout: pyvenv.cfg with `config` and lib/python<version>/site-packages.
  fs::path MakeVenv(const std::string& name, const std::string& config,
                    const std::string& lib_version) {
    fs::path venv = root_ / name;
    fs::create_directories(venv / "lib" / ("python" + lib_version) / "site-packages");
    if (!config.empty()) std::ofstream(venv / "pyvenv.cfg") << config;
    return venv;
  }

  fs::path root_;
};

TEST_F(PythonEnvTest, EmbeddedVersionIsMajorMinor) { EXPECT_EQ(EmbeddedPythonVersion(), "3.11"); }

TEST_F(PythonEnvTest, VenvOfTheEmbeddedVersionGivesItsSitePackages) {
  std::string version = EmbeddedPythonVersion();
  fs::path venv = MakeVenv(
      "good",
      "home = /usr/bin\ninclude-system-site-packages = false\nversion = " + version + ".2\n",
      version);
  auto environment = InspectPythonEnvironment(venv.string() + "/", "VIRTUAL_ENV");
  ASSERT_TRUE(environment.has_value()) << environment.error().message();
  EXPECT_EQ(environment->root, venv.string());
  EXPECT_EQ(environment->site_packages,
            (venv / "lib" / ("python" + version) / "site-packages").string());
  EXPECT_EQ(environment->version, version);
  EXPECT_FALSE(environment->include_system_site_packages);
}

TEST_F(PythonEnvTest, IncludeSystemSitePackagesAndVirtualenvVersionInfo) {
  std::string version = EmbeddedPythonVersion();
  fs::path venv = MakeVenv(
      "virtualenv",
      "include-system-site-packages = true\nversion_info = " + version + ".4.final.0\n", version);
  auto environment = InspectPythonEnvironment(venv.string(), "VIRTUAL_ENV");
  ASSERT_TRUE(environment.has_value()) << environment.error().message();
  EXPECT_TRUE(environment->include_system_site_packages);
  EXPECT_EQ(environment->version, version);
}

TEST_F(PythonEnvTest, AnotherMinorVersionNamesBothVersions) {
  fs::path venv = MakeVenv("other", "home = /usr/bin\nversion = 3.12.1\n", "3.12");
  auto environment =
      InspectPythonEnvironment(venv.string(), "p.yml:4: engine.runner.config.python_env");
  ASSERT_FALSE(environment.has_value());
  const std::string& message = environment.error().message();
  EXPECT_EQ(environment.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(environment.error().failure_class(), FailureClass::kConfig);
  EXPECT_TRUE(message.starts_with("p.yml:4: engine.runner.config.python_env: ")) << message;
  EXPECT_NE(message.find("is Python 3.12, bizon embeds Python " + EmbeddedPythonVersion()),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(venv.string()), std::string::npos) << message;
}

TEST_F(PythonEnvTest, WithoutPyvenvCfgTheLibFolderGivesTheVersion) {
  fs::path venv = MakeVenv("bare", "", "3.9");
  auto environment = InspectPythonEnvironment(venv.string(), "VIRTUAL_ENV");
  ASSERT_FALSE(environment.has_value());
  EXPECT_NE(environment.error().message().find("is Python 3.9"), std::string::npos)
      << environment.error().message();
}

TEST_F(PythonEnvTest, NotAVirtualenvAndMissingFolderAreErrors) {
  fs::create_directories(root_ / "plain");
  auto plain = InspectPythonEnvironment((root_ / "plain").string(), "VIRTUAL_ENV");
  ASSERT_FALSE(plain.has_value());
  EXPECT_NE(plain.error().message().find("not a Python virtualenv"), std::string::npos)
      << plain.error().message();
  auto missing = InspectPythonEnvironment((root_ / "missing").string(), "VIRTUAL_ENV");
  ASSERT_FALSE(missing.has_value());
  EXPECT_TRUE(missing.error().message().starts_with("VIRTUAL_ENV: no such Python environment"))
      << missing.error().message();
}

TEST_F(PythonEnvTest, PrivateSiteBesideTheExecutableOrInstalled) {
  fs::create_directories(root_ / "build" / "python-site");
  EXPECT_EQ(FindPrivateSite((root_ / "build" / "bizon").string()),
            (root_ / "build" / "python-site").string());
  fs::create_directories(root_ / "prefix" / "bin");
  fs::create_directories(root_ / "prefix" / "lib" / "bizon" / "python");
  EXPECT_EQ(FindPrivateSite((root_ / "prefix" / "bin" / "bizon").string()),
            (root_ / "prefix" / "lib" / "bizon" / "python").string());
  EXPECT_EQ(FindPrivateSite((root_ / "elsewhere" / "bizon").string()), "");
}

}  // namespace
}  // namespace bizon::python
