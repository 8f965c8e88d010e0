// ompl_plan: plan one OMPL.app 3D (SE3 rigid body) problem with OMPL.app's own
// C++ setup, for the by-hand comparisons in benches/compare/plan_vs_ompl.sh and
// arena_vs_ompl.sh.
//
//   ompl_plan PROBLEM.cfg --seed N --time-limit S --out PATH.path [--verbose]
//   ompl_plan PROBLEM.cfg --seed N --benchmark RUNS --log RUNS.log [--time-limit S]
//   ompl_plan PROBLEM.cfg --origin
//   ompl_plan PROBLEM.cfg --check PATH.path [--resolution F] [--per-state]
//
// Prints ONE JSON line on stdout (OMPL's log goes to stderr, warnings and up
// unless --verbose).
//
// --benchmark runs OMPL's own ompl::tools::Benchmark on the same planner and setup:
// RUNS solves (the planner cleared between them, each simplified) within the time
// limit, written as OMPL's benchmark log, the input of ompl_benchmark_statistics.
//
// --origin prints OMPL.app's robot origin (RigidBodyGeometry::getRobotCenter, the
// float mean of the vertices assimp imported) and the robot's radius about it.
//
// --check is OMPL.app's own verdict on a path (`x y z qx qy qz qw` per line, as
// printAsMatrix writes and OMPL.app's stored .path files hold; quaternions are
// normalized as read). Two sweeps, both with the problem's FCL state validity
// checker (FCLStateValidityChecker: bounds + fcl::collide) and its clearance
// (fcl::distance):
//   * validator: the states OMPL's DiscreteMotionValidator tests (the first
//     state, then per segment j/nd for j = 1..nd, nd = validSegmentCount);
//   * dense: per segment, states spaced so that no robot point moves more than
//     F (default 0.002) of the world's bounding-box diagonal between two of them
//     (position lerp, quaternion slerp: the state space's interpolate).
// Each reports its states, the invalid ones, the first invalid (segment, t), the
// smallest clearance among valid states and its wall time. --per-state adds
// every validator state's validity and clearance.
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
#include <omplapp/geometry/detail/assimpUtil.h>

#include <ompl/base/PlannerData.h>
#include <ompl/tools/benchmark/Benchmark.h>
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

#include <algorithm>
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
                  << "       " << argv0 << " PROBLEM.cfg --seed N --benchmark RUNS --log RUNS.log [--time-limit S]\n"
                  << "       " << argv0 << " PROBLEM.cfg --origin\n"
                  << "       " << argv0 << " PROBLEM.cfg --check PATH.path [--resolution F] [--per-state]\n"
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

    // The robot's vertices about OMPL.app's origin: the vertices assimp imported,
    // through the node transforms, less robotShift (as the FCL checker places them).
    double robotRadius(const ompl::app::GeometrySpecification &geom)
    {
        double r = 0.0;
        for (std::size_t i = 0; i < geom.robot.size(); ++i)
        {
            std::vector<aiVector3D> v;
            ompl::app::scene::extractVertices(geom.robot[i], v);
            for (const auto &p : v)
            {
                const aiVector3D d = p - geom.robotShift[i];
                r = std::max(r, static_cast<double>(d.Length()));
            }
        }
        return r;
    }

    // The same vertices' mean summed in double (OMPL.app sums in float); returns how
    // many vertices there are.
    std::size_t robotMeanF64(const ompl::app::GeometrySpecification &geom, double out[3])
    {
        out[0] = out[1] = out[2] = 0.0;
        std::vector<aiVector3D> v;
        ompl::app::scene::extractVertices(geom.robot[0], v);
        for (const auto &p : v)
            for (int k = 0; k < 3; ++k)
                out[k] += p[k];
        for (int k = 0; k < 3; ++k)
            out[k] /= static_cast<double>(v.size());
        return v.size();
    }

    double worldDiagonal(const ompl::app::GeometrySpecification &geom)
    {
        double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (const aiScene *s : geom.obstacles)
        {
            std::vector<aiVector3D> v;
            ompl::app::scene::extractVertices(s, v);
            for (const auto &p : v)
                for (int k = 0; k < 3; ++k)
                {
                    lo[k] = std::min(lo[k], static_cast<double>(p[k]));
                    hi[k] = std::max(hi[k], static_cast<double>(p[k]));
                }
        }
        return std::sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                         (hi[2] - lo[2]) * (hi[2] - lo[2]));
    }

    std::vector<ob::ScopedState<ob::SE3StateSpace>> readPath(const std::string &file, const ob::StateSpacePtr &space)
    {
        std::vector<ob::ScopedState<ob::SE3StateSpace>> states;
        std::ifstream in(file);
        if (!in)
        {
            std::cerr << "cannot read " << file << std::endl;
            std::exit(2);
        }
        std::string line;
        int lineNo = 0;
        while (std::getline(in, line))
        {
            ++lineNo;
            std::istringstream ls(line);
            double v[7];
            int n = 0;
            while (n < 7 && ls >> v[n])
                ++n;
            if (n == 0)
                continue;
            if (n != 7)
            {
                std::cerr << file << ":" << lineNo << ": expected 7 numbers (x y z qx qy qz qw)" << std::endl;
                std::exit(2);
            }
            const double qn = std::sqrt(v[3] * v[3] + v[4] * v[4] + v[5] * v[5] + v[6] * v[6]);
            ob::ScopedState<ob::SE3StateSpace> st(space);
            st->setXYZ(v[0], v[1], v[2]);
            st->rotation().x = v[3] / qn;
            st->rotation().y = v[4] / qn;
            st->rotation().z = v[5] / qn;
            st->rotation().w = v[6] / qn;
            states.push_back(st);
        }
        return states;
    }

    // Rotation angle between two unit quaternions (the shorter arc).
    double turnAngle(const ob::SO3StateSpace::StateType &a, const ob::SO3StateSpace::StateType &b)
    {
        double d = std::fabs(a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w);
        return 2.0 * std::acos(std::min(1.0, d));
    }

    struct Sweep
    {
        long states = 0, invalid = 0;
        long firstSegment = -1;
        double firstT = NAN;
        double minClearance = INFINITY;
        double seconds = 0.0;
        std::string perState;

        void test(const ob::SpaceInformationPtr &si, const ob::State *s, long segment, double t, bool keep)
        {
            ++states;
            const bool valid = si->isValid(s);
            double c = NAN;
            if (valid)
            {
                c = si->getStateValidityChecker()->clearance(s);
                minClearance = std::min(minClearance, c);
            }
            else
            {
                ++invalid;
                if (firstSegment < 0)
                {
                    firstSegment = segment;
                    firstT = t;
                }
            }
            if (keep)
            {
                if (!perState.empty())
                    perState += ",";
                perState += "[" + std::to_string(segment) + "," + num(t) + "," + (valid ? "true" : "false") + "," +
                            num(c) + "]";
            }
        }

        std::string json() const
        {
            return "{\"states\":" + std::to_string(states) + ",\"invalid\":" + std::to_string(invalid) +
                   ",\"first_invalid\":" +
                   (firstSegment < 0 ? std::string("null")
                                     : "{\"segment\":" + std::to_string(firstSegment) + ",\"t\":" + num(firstT) + "}") +
                   ",\"min_clearance\":" + num(minClearance) + ",\"seconds\":" + num(seconds) +
                   (perState.empty() ? std::string() : ",\"per_state\":[" + perState + "]") + "}";
        }
    };

    // OMPL.app's verdict on a stored path (see the header comment, --check).
    int checkPath(ompl::app::SE3RigidBodyPlanning &app, const std::string &cfg, const std::string &file,
                  double resolution, bool perState)
    {
        const ob::SpaceInformationPtr &si = app.getSpaceInformation();
        const ob::StateSpacePtr &space = app.getStateSpace();
        const auto path = readPath(file, space);
        if (path.empty())
        {
            std::cerr << file << ": no states" << std::endl;
            return 2;
        }
        const ompl::app::GeometrySpecification &geom = app.getGeometrySpecification();
        const double radius = robotRadius(geom);
        const double step = resolution * worldDiagonal(geom);

        Sweep validator, dense;
        ob::ScopedState<ob::SE3StateSpace> s(space);
        auto t0 = std::chrono::steady_clock::now();
        validator.test(si, path[0].get(), 0, 0.0, perState);
        for (std::size_t k = 0; k + 1 < path.size(); ++k)
        {
            const unsigned int nd = space->validSegmentCount(path[k].get(), path[k + 1].get());
            for (unsigned int j = 1; j <= nd; ++j)
            {
                const double t = static_cast<double>(j) / nd;
                space->interpolate(path[k].get(), path[k + 1].get(), t, s.get());
                validator.test(si, s.get(), static_cast<long>(k), t, perState);
            }
        }
        validator.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

        t0 = std::chrono::steady_clock::now();
        dense.test(si, path[0].get(), 0, 0.0, false);
        for (std::size_t k = 0; k + 1 < path.size(); ++k)
        {
            const auto &a = *path[k], &b = *path[k + 1];
            const double dx = a.getX() - b.getX(), dy = a.getY() - b.getY(), dz = a.getZ() - b.getZ();
            const double motion = std::sqrt(dx * dx + dy * dy + dz * dz) + turnAngle(a.rotation(), b.rotation()) * radius;
            const long n = std::max(1L, static_cast<long>(std::ceil(motion / step)));
            for (long j = 1; j <= n; ++j)
            {
                const double t = static_cast<double>(j) / n;
                space->interpolate(path[k].get(), path[k + 1].get(), t, s.get());
                dense.test(si, s.get(), static_cast<long>(k), t, false);
            }
        }
        dense.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

        const aiVector3D o = app.getRobotCenter(0);
        std::cout << "{\"cfg\":\"" << jsonEscape(cfg) << "\",\"path\":\"" << jsonEscape(file) << "\""
                  << ",\"path_states\":" << path.size() << ",\"robot_origin\":[" << num(o.x) << "," << num(o.y) << ","
                  << num(o.z) << "],\"robot_radius\":" << num(radius) << ",\"dense_step\":" << num(step)
                  << ",\"valid\":" << (validator.invalid == 0 ? "true" : "false")
                  << ",\"validator\":" << validator.json() << ",\"dense\":" << dense.json()
                  << ",\"ompl\":\"" << OMPL_MAJOR_VERSION << "." << OMPL_MINOR_VERSION << "." << OMPL_PATCH_VERSION
                  << "\",\"fcl\":\"" << FCL_VERSION << "\"}" << std::endl;
        return 0;
    }
}  // namespace

int main(int argc, char **argv)
{
    std::string cfg, out, checkFile, logFile;
    unsigned int benchmarkRuns = 0;
    long seed = -1;
    bool originOnly = false, perState = false;
    double resolution = 0.002;
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
        else if (a == "--origin")
            originOnly = true;
        else if (a == "--check")
            checkFile = next();
        else if (a == "--resolution")
            resolution = std::stod(next());
        else if (a == "--benchmark")
            benchmarkRuns = static_cast<unsigned int>(std::stoul(next()));
        else if (a == "--log")
            logFile = next();
        else if (a == "--per-state")
            perState = true;
        else if (a == "-h" || a == "--help")
            usage(argv[0]);
        else if (!a.empty() && a[0] == '-')
            usage(argv[0]);
        else if (cfg.empty())
            cfg = a;
        else
            usage(argv[0]);
    }
    const bool inspect = originOnly || !checkFile.empty();
    if (cfg.empty() || (seed <= 0 && !inspect))
        usage(argv[0]);
    if (seed <= 0)
        seed = 1;

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
    if (timeLimit <= 0.0 && !inspect)
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

    if (originOnly)
    {
        const aiVector3D o = app.getRobotCenter(0);
        std::cout << "{\"cfg\":\"" << jsonEscape(cfg) << "\",\"robot\":\""
                  << jsonEscape(bo.declared_options_["problem.robot"]) << "\",\"robot_origin\":[" << num(o.x) << ","
                  << num(o.y) << "," << num(o.z) << "],\"robot_radius\":" << num(robotRadius(app.getGeometrySpecification()));
        double m[3];
        const std::size_t count = robotMeanF64(app.getGeometrySpecification(), m);
        std::cout << ",\"vertices\":" << count << ",\"robot_origin_f64\":[" << num(m[0]) << "," << num(m[1]) << ","
                  << num(m[2]) << "]}" << std::endl;
        return 0;
    }
    if (!checkFile.empty())
        return checkPath(app, cfg, checkFile, resolution, perState);

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

    // OMPL's own benchmark: RUNS solves of the planner (cleared between runs), each
    // simplified, written as OMPL's benchmark log (ompl_benchmark_statistics' input).
    if (benchmarkRuns > 0)
    {
        if (logFile.empty())
            usage(argv[0]);
        ompl::tools::Benchmark b(app, bo.declared_options_["problem.name"]);
        b.addPlanner(planner);
        ompl::tools::Benchmark::Request req(timeLimit, 4096.0, benchmarkRuns, 0.05, false, false, true);
        b.benchmark(req);
        return b.saveResultsToFile(logFile.c_str()) ? 0 : 1;
    }

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
