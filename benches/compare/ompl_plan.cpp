// ompl_plan: plan one OMPL.app 3D (SE3 rigid body) problem with OMPL.app's own
// C++ setup, for the by-hand comparison in benches/compare/plan_vs_ompl.sh.
//
//   ompl_plan PROBLEM.cfg --seed N --time-limit S --out PATH.path [--verbose]
//
// Prints ONE JSON line on stdout (OMPL's log goes to stderr, warnings and up
// unless --verbose).
//
// How the .cfg is read
// --------------------
// The reader is OMPL.app's own: benchmark/BenchmarkOptions.cpp is compiled from
// the omplapp checkout given to build_ompl_plan.sh (nothing of omplapp is copied
// into this repository). The problem is then set up with the same calls, in the
// same order, as omplapp's benchmark does for an SE3 problem:
//   * CFGBenchmark::setMeshes      -> setMeshPath({cfg folder, OMPLAPP_RESOURCE_DIR}),
//                                     setRobotMesh(problem.robot), setEnvironmentMesh(problem.world)
//   * SE3BaseBenchmark::getStartState / getGoalState  -> setXYZ + rotation().setAxisAngle(axis, theta)
//   * setStartAndGoalStates(start, goal, problem.threshold)   (default 1e-6)
//   * SE3BaseBenchmark::setBounds  -> problem.volume.{min,max}.{x,y,z} (including its
//                                     quirk of testing max.y twice and never max.z)
//   * CFGBenchmark::getOptimizationObjective (none in the 3D cfgs used here)
//   * SE3RigidBodyPlanning::setup() (FCL state validity checker, OMPL's default
//     DiscreteMotionValidator at longest_valid_segment_fraction 0.01)
//   * CFGBenchmark::allocPlanner("rrtconnect") + preSwitchEvent: the planner
//     context (problem-wide keys such as `sampler=obstacle_based`, merged as
//     BenchmarkOptions does) installs the named valid state sampler and sets
//     SpaceInformation params; `rrtconnect.*` keys set planner params.
//     When the cfg has no `rrtconnect=` entry we read the cfg once more with
//     "[planner] rrtconnect=" appended (from a temp copy, mesh folder kept as the
//     original cfg's), so the problem context reaches it exactly as it reaches
//     the cfg's listed planners. (RRTConnect samples with the plain state
//     sampler, so `sampler=` does not actually change what it does.)
//
// Seeding: ompl::RNG::setSeed(seed) is the first thing main() does, before any
// OMPL object exists. RRTConnect and FCL run single-threaded.
//
// Timing: "time_s" is SimpleSetup::getLastPlanComputationTime(), i.e. the wall
// time of planner->solve(ptc) alone (setup is done before); "simplify_s" is
// simplifySolution() (OMPL's default simplifyMax), reported separately.
// The path written is the simplified one, in PathGeometric::printAsMatrix format
// (`x y z qx qy qz qw` per line), with the stream precision raised to 17 digits
// (printAsMatrix itself uses the stream's precision, 6 by default).

#include "BenchmarkOptions.h"

#include <omplapp/config.h>
#include <omplapp/apps/SE3RigidBodyPlanning.h>

#include <ompl/base/PlannerData.h>
#include <ompl/base/objectives/MaximizeMinClearanceObjective.h>
#include <ompl/base/objectives/MechanicalWorkOptimizationObjective.h>
#include <ompl/base/objectives/PathLengthOptimizationObjective.h>
#include <ompl/base/samplers/BridgeTestValidStateSampler.h>
#include <ompl/base/samplers/GaussianValidStateSampler.h>
#include <ompl/base/samplers/MaximizeClearanceValidStateSampler.h>
#include <ompl/base/samplers/ObstacleBasedValidStateSampler.h>
#include <ompl/base/samplers/UniformValidStateSampler.h>
#include <ompl/geometric/planners/rrt/RRTConnect.h>
#include <ompl/util/Console.h>
#include <ompl/util/RandomNumbers.h>
#include <ompl/config.h>

#include <fcl/config.h>

#include <boost/filesystem.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <ctime>
#include <unistd.h>

#ifndef OMPL_PLAN_VARIANT
#define OMPL_PLAN_VARIANT "debian-fcl"
#endif

namespace ob = ompl::base;
namespace og = ompl::geometric;

namespace
{
    // Everything OMPL logs goes to stderr so that stdout carries only the JSON line.
    class StderrHandler : public ompl::msg::OutputHandler
    {
    public:
        void log(const std::string &text, ompl::msg::LogLevel level, const char *filename, int line) override
        {
            static const char *names[] = {"Debug", "Info", "Warning", "Error"};
            const char *name = (level >= 0 && level <= 3) ? names[level] : "Log";
            if (level >= ompl::msg::LOG_WARN)
                std::cerr << name << ": " << text << "\n         at line " << line << " in " << filename << std::endl;
            else
                std::cerr << name << ": " << text << std::endl;
        }
    };

    std::string jsonEscape(const std::string &s)
    {
        std::string o;
        for (char c : s)
        {
            if (c == '"' || c == '\\')
            {
                o += '\\';
                o += c;
            }
            else if (static_cast<unsigned char>(c) < 0x20)
            {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                o += buf;
            }
            else
                o += c;
        }
        return o;
    }

    std::string num(double v)
    {
        if (!std::isfinite(v))
            return "null";
        std::ostringstream s;
        s << std::setprecision(10) << v;
        return s.str();
    }

    // CPU time of this thread: less sensitive than wall time to a loaded machine.
    double threadCpuSeconds()
    {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
    }

    [[noreturn]] void usage(const char *argv0)
    {
        std::cerr << "usage: " << argv0
                  << " PROBLEM.cfg --seed N --time-limit S --out PATH.path [--verbose]\n"
                     "  --time-limit defaults to the cfg's [benchmark] time_limit\n";
        std::exit(2);
    }

    // CFGBenchmark::allocValidStateSampler
    ob::ValidStateSamplerPtr allocValidStateSampler(const ob::SpaceInformation *si, const std::string &type,
                                                    const BenchmarkOptions::ContextOpt &ctx)
    {
        ob::ValidStateSamplerPtr vss;
        if (type == "uniform")
            vss = std::make_shared<ob::UniformValidStateSampler>(si);
        else if (type == "gaussian")
            vss = std::make_shared<ob::GaussianValidStateSampler>(si);
        else if (type == "obstacle_based")
            vss = std::make_shared<ob::ObstacleBasedValidStateSampler>(si);
        else if (type == "max_clearance")
            vss = std::make_shared<ob::MaximizeClearanceValidStateSampler>(si);
        else if (type == "bridge_test")
            vss = std::make_shared<ob::BridgeTestValidStateSampler>(si);
        else
            std::cerr << "Unknown sampler type: " << type << std::endl;
        if (vss)
            vss->params().setParams(ctx, true);
        return vss;
    }

    // CFGBenchmark::getOptimizationObjective
    ob::OptimizationObjectivePtr getOptimizationObjective(BenchmarkOptions &bo, const ob::SpaceInformationPtr &si)
    {
        ob::OptimizationObjectivePtr opt;
        if (bo.declared_options_.find("problem.objective") == bo.declared_options_.end())
            return opt;
        std::string objective = bo.declared_options_["problem.objective"];
        if (objective.substr(0, 6) == "length")
            opt = std::make_shared<ob::PathLengthOptimizationObjective>(si);
        else if (objective.substr(0, 17) == "max_min_clearance")
            opt = std::make_shared<ob::MaximizeMinClearanceObjective>(si);
        else if (objective.substr(0, 15) == "mechanical_work")
            opt = std::make_shared<ob::MechanicalWorkOptimizationObjective>(si);
        if (opt && bo.declared_options_.find("problem.objective.threshold") != bo.declared_options_.end())
        {
            try
            {
                opt->setCostThreshold(ob::Cost(std::stod(bo.declared_options_["problem.objective.threshold"])));
            }
            catch (std::invalid_argument &)
            {
            }
        }
        return opt;
    }

    // SE3BaseBenchmark::getStartState / getGoalState
    bool readPose(BenchmarkOptions &bo, const std::string &which, ob::ScopedState<ob::SE3StateSpace> &st)
    {
        auto &d = bo.declared_options_;
        try
        {
            st->setXYZ(std::stod(d["problem." + which + ".x"]), std::stod(d["problem." + which + ".y"]),
                       std::stod(d["problem." + which + ".z"]));
            st->rotation().setAxisAngle(std::stod(d["problem." + which + ".axis.x"]),
                                        std::stod(d["problem." + which + ".axis.y"]),
                                        std::stod(d["problem." + which + ".axis.z"]),
                                        std::stod(d["problem." + which + ".theta"]));
        }
        catch (std::invalid_argument &)
        {
            std::cerr << "Unable to read " << which << " state" << std::endl;
            return false;
        }
        return true;
    }

    // SE3BaseBenchmark::setBounds (same key tests, max.y tested twice as upstream)
    void setBounds(BenchmarkOptions &bo, const ob::StateSpacePtr &space)
    {
        auto &d = bo.declared_options_;
        try
        {
            if (d.find("problem.volume.min.x") != d.end() && d.find("problem.volume.min.y") != d.end() &&
                d.find("problem.volume.min.z") != d.end() && d.find("problem.volume.max.x") != d.end() &&
                d.find("problem.volume.max.y") != d.end() && d.find("problem.volume.max.y") != d.end())
            {
                ob::RealVectorBounds bounds(3);
                bounds.setLow(0, std::stod(d["problem.volume.min.x"]));
                bounds.setLow(1, std::stod(d["problem.volume.min.y"]));
                bounds.setLow(2, std::stod(d["problem.volume.min.z"]));
                bounds.setHigh(0, std::stod(d["problem.volume.max.x"]));
                bounds.setHigh(1, std::stod(d["problem.volume.max.y"]));
                bounds.setHigh(2, std::stod(d["problem.volume.max.z"]));
                space->as<ob::SE3StateSpace>()->setBounds(bounds);
            }
        }
        catch (std::invalid_argument &)
        {
        }
    }

    // The options the benchmark would give an `rrtconnect=` entry of this cfg.
    BenchmarkOptions::AllOptions rrtconnectOptions(const std::string &cfg)
    {
        BenchmarkOptions bo(cfg.c_str());
        auto it = bo.planners_.find("rrtconnect");
        if (it != bo.planners_.end() && !it->second.empty())
            return it->second.front();

        // Not listed: append a [planner] rrtconnect= entry to a temp copy and read that.
        std::ifstream in(cfg);
        std::stringstream text;
        text << in.rdbuf() << "\n[planner]\nrrtconnect=\n";
        char tmpl[] = "/tmp/ompl_plan_cfg_XXXXXX";
        int fd = mkstemp(tmpl);
        if (fd < 0)
        {
            std::perror("mkstemp");
            std::exit(1);
        }
        const std::string s = text.str();
        if (write(fd, s.data(), s.size()) != static_cast<ssize_t>(s.size()))
        {
            std::perror("write");
            std::exit(1);
        }
        close(fd);
        BenchmarkOptions bo2(tmpl);
        unlink(tmpl);
        it = bo2.planners_.find("rrtconnect");
        if (it != bo2.planners_.end() && !it->second.empty())
            return it->second.front();
        return {};
    }
}  // namespace

int main(int argc, char **argv)
{
    std::string cfg, out;
    long seed = -1;
    double timeLimit = -1.0;
    bool verbose = false;
    for (int i = 1; i < argc; ++i)
    {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc)
                usage(argv[0]);
            return argv[++i];
        };
        if (a == "--seed")
            seed = std::stol(next());
        else if (a == "--time-limit")
            timeLimit = std::stod(next());
        else if (a == "--out")
            out = next();
        else if (a == "--verbose")
            verbose = true;
        else if (a == "-h" || a == "--help")
            usage(argv[0]);
        else if (!a.empty() && a[0] == '-')
            usage(argv[0]);
        else if (cfg.empty())
            cfg = a;
        else
            usage(argv[0]);
    }
    if (cfg.empty() || seed <= 0)
        usage(argv[0]);

    // Seed OMPL's RNG before anything in OMPL allocates one.
    ompl::RNG::setSeed(static_cast<std::uint_fast32_t>(seed));

    static StderrHandler handler;
    ompl::msg::useOutputHandler(&handler);
    ompl::msg::setLogLevel(verbose ? ompl::msg::LOG_INFO : ompl::msg::LOG_WARN);

    if (!boost::filesystem::exists(cfg))
    {
        std::cerr << "no such cfg: " << cfg << std::endl;
        return 2;
    }

    BenchmarkOptions bo(cfg.c_str());
    if (!bo.isSE3Problem())
    {
        std::cerr << cfg << " is not an SE3 problem" << std::endl;
        return 2;
    }
    if (timeLimit <= 0.0)
    {
        try
        {
            timeLimit = std::stod(bo.declared_options_["benchmark.time_limit"]);
        }
        catch (std::invalid_argument &)
        {
            std::cerr << "no --time-limit and no benchmark.time_limit in the cfg" << std::endl;
            return 2;
        }
    }
    const BenchmarkOptions::AllOptions opt = rrtconnectOptions(cfg);

    auto t0 = std::chrono::steady_clock::now();

    // SE3Benchmark::configure
    ompl::app::SE3RigidBodyPlanning app;
    app.setMeshPath({bo.path_, OMPLAPP_RESOURCE_DIR});
    if (!app.setRobotMesh(bo.declared_options_["problem.robot"]) ||
        !app.setEnvironmentMesh(bo.declared_options_["problem.world"]))
    {
        std::cerr << "could not load the meshes of " << cfg << std::endl;
        return 2;
    }
    ob::ScopedState<ob::SE3StateSpace> start(app.getStateSpace());
    ob::ScopedState<ob::SE3StateSpace> goal(app.getStateSpace());
    if (!readPose(bo, "start", start) || !readPose(bo, "goal", goal))
        return 2;
    app.setStartAndGoalStates(start, goal, std::stod(bo.declared_options_["problem.threshold"]));
    setBounds(bo, app.getStateSpace());
    app.setOptimizationObjective(getOptimizationObjective(bo, app.getSpaceInformation()));
    app.setup();

    // CFGBenchmark::allocPlanner("rrtconnect") + preSwitchEvent
    const ob::SpaceInformationPtr &si = app.getSpaceInformation();
    auto planner = std::make_shared<og::RRTConnect>(si);
    {
        BenchmarkOptions::PlannerOpt p = opt.p;
        auto iter = p.find("name");
        if (iter != p.end())
        {
            planner->setName(iter->second);
            p.erase(iter);
        }
        planner->params().setParams(p);
    }
    const BenchmarkOptions::ContextOpt ctx = opt.c;
    auto sit = ctx.find("sampler");
    if (sit != ctx.end())
    {
        const std::string type = sit->second;
        si->setValidStateSamplerAllocator([type, ctx](const ob::SpaceInformation *s)
                                          { return allocValidStateSampler(s, type, ctx); });
    }
    else
        si->clearValidStateSamplerAllocator();
    si->params().setParams(ctx, true);

    app.setPlanner(planner);
    app.setup();
    const double setupSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    // Plan. getLastPlanComputationTime() times planner->solve() alone.
    const double cpu0 = threadCpuSeconds();
    const ob::PlannerStatus status = app.solve(timeLimit);
    const double solveCpuSeconds = threadCpuSeconds() - cpu0;  // includes solve()'s setup() re-check
    const double planSeconds = app.getLastPlanComputationTime();
    const bool exact = status == ob::PlannerStatus::EXACT_SOLUTION;
    const bool approximate = status == ob::PlannerStatus::APPROXIMATE_SOLUTION;

    ob::PlannerData pd(si);
    app.getPlannerData(pd);
    const unsigned int graphStates = pd.numVertices();

    double simplifySeconds = 0.0, pathLength = NAN, rawLength = NAN;
    long pathStates = 0, rawStates = 0;
    bool pathValid = false, wrote = false;
    if (exact)
    {
        og::PathGeometric &raw = app.getSolutionPath();
        rawStates = static_cast<long>(raw.getStateCount());
        rawLength = raw.length();
        app.simplifySolution();
        simplifySeconds = app.getLastSimplificationTime();
        og::PathGeometric &path = app.getSolutionPath();
        pathStates = static_cast<long>(path.getStateCount());
        pathLength = path.length();
        pathValid = path.check();  // OMPL's own (discrete) check of the simplified path
        if (!out.empty())
        {
            boost::filesystem::path op(out);
            if (op.has_parent_path())
                boost::filesystem::create_directories(op.parent_path());
            std::ofstream f(out);
            f << std::setprecision(17);
            path.printAsMatrix(f);
            wrote = f.good();
        }
    }
    else if (!out.empty())
        std::remove(out.c_str());  // no stale path from an earlier run

    std::cout << "{\"problem\":\"" << jsonEscape(bo.declared_options_["problem.name"]) << "\""
              << ",\"cfg\":\"" << jsonEscape(cfg) << "\""
              << ",\"seed\":" << seed
              << ",\"solved\":" << (exact ? "true" : "false")
              << ",\"approximate\":" << (approximate ? "true" : "false")
              << ",\"status\":\"" << jsonEscape(status.asString()) << "\""
              << ",\"time_s\":" << num(planSeconds)
              << ",\"solve_cpu_s\":" << num(solveCpuSeconds)
              << ",\"simplify_s\":" << num(simplifySeconds)
              << ",\"setup_s\":" << num(setupSeconds)
              << ",\"time_limit\":" << num(timeLimit)
              << ",\"states\":" << graphStates
              << ",\"raw_path_states\":" << rawStates
              << ",\"raw_path_length\":" << num(rawLength)
              << ",\"path_states\":" << pathStates
              << ",\"path_length\":" << num(pathLength)
              << ",\"ompl_path_check\":" << (pathValid ? "true" : "false")
              << ",\"path\":" << (wrote ? "\"" + jsonEscape(out) + "\"" : std::string("null"))
              << ",\"sampler\":" << (sit != ctx.end() ? "\"" + jsonEscape(sit->second) + "\"" : std::string("null"))
              << ",\"planner\":\"" << jsonEscape(planner->getName()) << "\""
              << ",\"ompl\":\"" << OMPL_MAJOR_VERSION << "." << OMPL_MINOR_VERSION << "." << OMPL_PATCH_VERSION << "\""
              << ",\"fcl\":\"" << FCL_VERSION << "\""
              << ",\"variant\":\"" << OMPL_PLAN_VARIANT << "\""
              << "}" << std::endl;
    return 0;
}
