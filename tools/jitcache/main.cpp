// jitcache: build kernels through the cache and inspect, verify and clear it.
#include "tools/jitcache/commands.hpp"

#include <jitcache/version.hpp>

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <set>

namespace {

// The help of the command a command line names (the deepest subcommand parsed so far, else the
// tool's), as `--help` prints it: what a usage error shows.
std::string usage_of(const CLI::App& app) {
  std::string parents;
  const CLI::App* command = &app;
  for (std::vector<CLI::App*> subs; !(subs = command->get_subcommands()).empty();) {
    parents += (parents.empty() ? "" : " ") + command->get_name();
    command = subs.front();
  }
  return command->help(parents);
}

} // namespace

int main(int argc, char** argv) {
  using namespace jitcache;
  CLI::App app{"jitcache: a cache of JIT-compiled GPU kernels (OpenCL, CUDA, HIP)", "jitcache"};
  app.require_subcommand(1);
  app.set_version_flag("--version", k_version);
  bool json = false;
  const auto add = [&](const char* name, const char* help) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->add_flag("--json", json, "one JSON object per line");
    return sub;
  };

  cli::BuildOptions build;
  CLI::App* build_cmd = add("build", "build each FILE through the cache and report how");
  build_cmd->add_option("--backend", build.backend, "opencl, cuda or hip")->required();
  build_cmd->add_option("--device", build.device, "device index within the backend (default 0)")
      ->check(CLI::NonNegativeNumber);
  build_cmd->add_option("--arch", build.arch, "compile for this target only (sm_90, gfx90a)");
  build_cmd->add_option("--options", build.options, "build options, exactly as given");
  build_cmd->add_option("--max-source-size", build.max_source_size,
                        "the largest source file read (default 64M; 0: no limit)");
  build_cmd->add_flag("--wait", build.wait,
                      "store each binary before reporting it, in this process (by default, "
                      "PoCL binaries are stored by a detached `jitcache store` after exit, as "
                      "JITCACHE_OPENCL_STORE says)");
  build_cmd->add_option("--record", build.record,
                        "append each request to this JSON-lines file, for `jitcache warm` (as "
                        "JITCACHE_RECORD does)");
  build_cmd->add_option("FILE", build.files, "kernel source files")->required();
  cli::BuildOptions explain;
  CLI::App* explain_cmd = add("explain", "show every key field of a build request, and why it "
                                         "differs from entries stored for the same source");
  explain_cmd->add_option("--backend", explain.backend, "opencl, cuda or hip")->required();
  explain_cmd->add_option("--device", explain.device, "device index within the backend")
      ->check(CLI::NonNegativeNumber);
  explain_cmd->add_option("--arch", explain.arch, "the target, as for build");
  explain_cmd->add_option("--options", explain.options, "build options, exactly as given");
  explain_cmd->add_option("--max-source-size", explain.max_source_size,
                          "the largest source file read (default 64M; 0: no limit)");
  explain_cmd->add_option("FILE", explain.files, "kernel source files")->required();
  cli::WarmOptions warm;
  CLI::App* warm_cmd = add("warm", "compile every request of a record (JITCACHE_RECORD) for "
                                   "the given targets, in parallel");
  warm_cmd->add_option("RECORD", warm.record, "the record (JSON lines)")->required();
  warm_cmd->add_option("--backend", warm.backend,
                       "only this backend's requests: opencl, cuda "
                       "or hip");
  warm_cmd->add_option("--arch", warm.arch,
                       "targets, comma-separated (sm_80,sm_90 or "
                       "gfx90a,gfx1030); default: each request's own");
  warm_cmd->add_option("--device", warm.device, "the OpenCL device index (default 0)")
      ->check(CLI::NonNegativeNumber);
  warm_cmd->add_option("--jobs", warm.jobs, "worker processes (default: one per core)")
      ->check(CLI::PositiveNumber);
  warm_cmd->add_flag("--serve", warm.serve)->group(""); // a worker of another warm's
  warm_cmd->add_option("--into", warm.into,
                       "fill this cache directory instead of the user "
                       "tier (as JITCACHE_DIR)");
  std::vector<std::string> store_files;
  bool store_remove = false;
  bool store_detach = false;
  CLI::App* store_cmd = add("store", "build and store the requests of request files that a "
                                     "process handed over (JITCACHE_OPENCL_STORE=detach)");
  store_cmd->add_flag("--remove", store_remove,
                      "mark each file taken once read (FILE.taken), remove it once done");
  store_cmd->add_flag("--detach", store_detach,
                      "return at once; store from a child process at idle CPU and I/O priority");
  std::string store_pending;
  store_cmd->add_option("--pending", store_pending,
                        "store a bounded batch of the request files of this pending folder "
                        "into the cache it belongs to, removing each once done, and clean it");
  bool store_wait = false;
  double store_timeout = 0;
  store_cmd->add_flag("--wait", store_wait,
                      "wait until every store handed over to this cache is done (making them "
                      "here when no store worker is alive), for CI to save a complete cache");
  store_cmd
      ->add_option("--timeout", store_timeout,
                   "with --wait: give up after this many seconds, exit 1 (default: none)")
      ->check(CLI::NonNegativeNumber)
      ->needs("--wait");
  store_cmd->add_option("FILE", store_files, "request files (JSON lines)");
  CLI::App* stats_cmd = add("stats", "hits, misses, compiles and bytes, per backend");
  bool stats_zero = false;
  stats_cmd->add_flag("-z,--zero", stats_zero,
                      "instead, set every counter back to zero (as `ccache -z`); entries are kept");
  CLI::App* list_cmd = add("list", "every entry of the user tier");
  CLI::App* info_cmd = add("info", "the resolved configuration and the runtimes' own caches");
  CLI::App* verify_cmd = add("verify", "check every stored entry; exit 1 if any is corrupt");
  CLI::App* clear_cmd = add("clear", "remove every entry and counter from the user tier");
  bool runtime_caches = false;
  bool dry_run = false;
  clear_cmd->add_flag("--runtime-caches", runtime_caches,
                      "instead, remove the runtimes' and bindings' own caches (PoCL, CUDA "
                      "driver, comgr, PyOpenCL, pytools, CuPy), as `jitcache info` lists them");
  clear_cmd->add_flag("--dry-run", dry_run, "with --runtime-caches: list them, remove nothing")
      ->needs("--runtime-caches");
  std::string prune_size;
  CLI::App* prune_cmd = add("prune", "evict least recently used entries down to a size, remove "
                                     "leftover compile leases, and compact the data file");
  prune_cmd->add_option("--max-size", prune_size,
                        "keep at most this much (10G, 512M, bytes; 0: no limit, as "
                        "JITCACHE_MAX_SIZE=0); default JITCACHE_MAX_SIZE");
  cli::ExportOptions export_options;
  CLI::App* export_cmd = add("export", "write the user tier's entries for one target into a "
                                       "package file (e.g. cuda-sm_90.jcpkg)");
  export_cmd->add_option("-o,--output", export_options.file, "the package file")->required();
  export_cmd->add_option("--backend", export_options.backend, "opencl, cuda or hip");
  CLI::Option* export_arch =
      export_cmd->add_option("--arch", export_options.arch, "the target (sm_90, gfx90a)");
  export_cmd->add_option("--device", export_options.device, "the target of this device")
      ->check(CLI::NonNegativeNumber)
      ->excludes(export_arch);
  std::string import_file;
  CLI::App* import_cmd = add("import", "copy a package's verified entries into the user tier");
  import_cmd->add_option("FILE", import_file, "the package file")->required();
  CLI::App* packages_cmd =
      add("packages", "the packages found, what each serves, and the devices that have none");

  cli::TuneOptions tune;
  cli::TuneRecordOptions tune_record;
  CLI::App* tune_cmd = add("tune", "the tuning database: list, show, clear or export its "
                                   "records, or tune the problems of a record (RECORD --runner)");
  tune_cmd
      ->add_option("COMMAND", tune.command,
                   "list, show, clear or export; anything else: a record (JITCACHE_RECORD) "
                   "whose tuning problems to tune")
      ->required();
  tune_cmd->add_option("KEY", tune.key_prefix, "only the records whose key starts with this");
  tune_cmd->add_option("-o,--output", tune.output, "export: write to this file");
  tune_cmd->add_option("--runner", tune_record.runner,
                       "RECORD: the shell command that tunes the problem on its standard input");
  tune_cmd->add_option("--mode", tune_record.mode,
                       "RECORD: JITCACHE_TUNE for the runner: missing (default), all or retune");
  tune_cmd
      ->add_option("--jobs", tune_record.jobs,
                   "RECORD: runners at once (default: one per "
                   "core; timed runs on a device never overlap)")
      ->check(CLI::PositiveNumber);
  tune_cmd
      ->add_option("--timeout", tune_record.timeout,
                   "RECORD: seconds a runner may take before it is killed (default: none)")
      ->check(CLI::NonNegativeNumber);
  cli::ConfigOptions config_options;
  CLI::App* config_cmd =
      add("config", "list the settings and where each comes from; KEY: print one; KEY VALUE: "
                    "set it in the configuration file; --unset KEY: remove it");
  config_cmd->add_option("KEY", config_options.key, "a setting: max_size, dir, log, remote, ...");
  config_cmd->add_option("VALUE", config_options.value,
                         "its new value, checked as the environment variable's");
  config_cmd->add_flag("--unset", config_options.unset, "remove KEY from the file");
  CLI::App* remote_cmd = add("remote", "the remote tiers of JITCACHE_REMOTE: ping, push, pull");
  remote_cmd->require_subcommand(1);
  std::string remote_backend;
  const auto remote_action = [&](const char* name, const char* help) {
    CLI::App* sub = remote_cmd->add_subcommand(name, help);
    sub->add_flag("--json", json, "one JSON object per line");
    sub->add_option("--backend", remote_backend, "only this backend's entries (push, pull)");
    return sub;
  };
  CLI::App* remote_ping = remote_action("ping", "whether each remote answers, and how it signs");
  CLI::App* remote_push = remote_action("push", "copy the user tier's entries to the remotes");
  remote_action("pull", "copy the remotes' entries into the user tier");

  const auto known = [](const CLI::App& parent, const char* name) {
    for (const CLI::App* sub : parent.get_subcommands({}))
      if (sub->get_name() == name)
        return true;
    return false;
  };
  // An unknown command is named as such (CLI11 would take it for an operand).
  if (argc >= 2 && argv[1][0] != '-' && !known(app, argv[1])) {
    cli::set_usage(app.help());
    return cli::usage_error(std::string("unknown command '") + argv[1] +
                            "' (expected build, explain, warm, store, stats, list, info, verify, "
                            "clear, prune, export, import, packages, tune, config or remote)");
  }
  if (argc >= 3 && std::string(argv[1]) == "remote" && argv[2][0] != '-' &&
      !known(*remote_cmd, argv[2])) {
    cli::set_usage(remote_cmd->help("jitcache"));
    return cli::usage_error(std::string("remote: unknown command '") + argv[2] +
                            "' (expected ping, push or pull)");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    cli::set_usage(usage_of(app));
    return cli::usage_error(e.what());
  }
  cli::set_usage(usage_of(app));

  // The command asked for.
  const auto run = [&](const Config& config, const cli::Output& out) {
    if (build_cmd->parsed())
      return cli::run_build(config, build, out);
    if (warm_cmd->parsed())
      return cli::run_warm(config, warm, out);
    if (store_cmd->parsed() && store_wait) {
      if (!store_files.empty() || store_detach || store_remove)
        return cli::usage_error("store --wait takes no FILE, --detach or --remove");
      return cli::run_store_wait(config, store_pending, store_timeout, out);
    }
    if (store_cmd->parsed())
      return cli::run_store(config, store_files, store_pending, store_remove, store_detach, out);
    if (explain_cmd->parsed())
      return cli::run_explain(config, explain, out);
    if (stats_cmd->parsed())
      return stats_zero ? cli::run_stats_zero(config, out) : cli::run_stats(config, out);
    if (list_cmd->parsed())
      return cli::run_list(config, out);
    if (info_cmd->parsed())
      return cli::run_info(config, out);
    if (verify_cmd->parsed())
      return cli::run_verify(config, out);
    if (clear_cmd->parsed())
      return runtime_caches ? cli::run_clear_runtime_caches(config, dry_run, out)
                            : cli::run_clear(config, out);
    if (export_cmd->parsed())
      return cli::run_export(config, export_options, out);
    if (import_cmd->parsed())
      return cli::run_import(config, import_file, out);
    if (packages_cmd->parsed())
      return cli::run_packages(config, out);
    if (prune_cmd->parsed())
      return cli::run_prune(config, prune_size, out);
    if (tune_cmd->parsed()) {
      if (std::set<std::string>{"list", "show", "clear", "export"}.count(tune.command))
        return cli::run_tune(config, tune, out);
      // A typo of a command ("lst") is not taken for a record that needs --runner.
      std::error_code error;
      if (!std::filesystem::exists(tune.command, error))
        return cli::usage_error("tune: unknown command or record '" + tune.command +
                                "' (expected list, show, clear, export, or RECORD --runner CMD)");
      tune_record.record = tune.command;
      return cli::run_tune_record(tune_record, out);
    }
    if (config_cmd->parsed())
      return cli::run_config(config_options, out);
    if (remote_cmd->parsed())
      return cli::run_remote(config,
                             remote_ping->parsed()   ? cli::RemoteAction::ping
                             : remote_push->parsed() ? cli::RemoteAction::push
                                                     : cli::RemoteAction::pull,
                             remote_backend, out);
    return 2;
  };
  const Config config = Config::from_environment();
  const cli::Output out(json);
  // No library's exception text reaches a person: each command reports its errors as
  // Expected; what escapes one anyway is a bug, said in words.
  try {
    return run(config, out);
  } catch (const std::bad_alloc&) {
    return cli::fail(Error(ErrorCode::runtime_error, "out of memory"));
  } catch (const std::exception&) {
    return cli::fail(Error(ErrorCode::runtime_error,
                           "an internal error ended the command (a bug: please report it, with "
                           "the command line)"));
  }
}
