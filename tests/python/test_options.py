import argparse

import pytest
from tracetop import options
from tracetop.options import OPTIONS, ConfigurationError, from_command_line, from_keywords


def parse(*arguments, **environ):
    parser = argparse.ArgumentParser(allow_abbrev=False)
    options.add_arguments(parser)
    return from_command_line(parser.parse_args(arguments), environ)


def test_defaults():
    configuration = parse()
    assert {option.key: configuration[option.key] for option in OPTIONS} == {
        option.key: option.default for option in OPTIONS
    }
    assert configuration["instrumenter"] == "profile"
    assert configuration["memory"] == 64 << 20


@pytest.mark.parametrize(
    "arguments, key, value",
    [
        (["--instrumenter=trace"], "instrumenter", "trace"),
        (["--instrumenter-type", "none"], "instrumenter", "none"),
        (["--noinstrumenter"], "instrumenter_enabled", False),
        (["--no-c-calls"], "c_calls", False),
        (["--memory", "2g"], "memory", 2 << 30),
        (["--memory=1024k"], "memory", 1 << 20),
        (["--output", "exp"], "output", "exp"),
        (["--no-trace"], "trace", False),
        (["--no-profile"], "profile", False),
        (["--no-profile", "--profile"], "profile", True),
        (["--format", "otf2,cubex"], "formats", ("otf2", "cubex")),
        (["--filter", "f.filt"], "filter", "f.filt"),
        (["--live"], "live", True),
        (["--objects"], "objects", True),
        (["--mpi"], "mpp", "mpi"),
        (["--mpp=mpi"], "mpp", "mpi"),
        (["--no-follow"], "follow", False),
        (["--keep-files"], "keep_files", True),
        (["-v"], "verbose", True),
        (["--verbose"], "verbose", True),
    ],
)
def test_command_line(arguments, key, value):
    assert parse(*arguments)[key] == value


@pytest.mark.parametrize(
    "arguments",
    [
        ["--instrumenter=magic"],
        ["--memory", "512k"],
        ["--memory", "lots"],
        ["--format", "pdf"],
        ["--mpp=pvm"],
    ],
)
def test_command_line_rejects(arguments, capsys):
    with pytest.raises(SystemExit) as exit:
        parse(*arguments)
    assert exit.value.code == 2
    assert "error: argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    "environ, key, value",
    [
        ({"TRACETOP_TOTAL_MEMORY": "256M"}, "memory", 256 << 20),
        ({"SCOREP_TOTAL_MEMORY": "16000k"}, "memory", 16000 << 10),
        ({"TRACETOP_TOTAL_MEMORY": "32M", "SCOREP_TOTAL_MEMORY": "16000k"}, "memory", 32 << 20),
        ({"SCOREP_ENABLE_TRACING": "false"}, "trace", False),
        ({"SCOREP_ENABLE_PROFILING": "0"}, "profile", False),
        ({"TRACETOP_ENABLE_PROFILING": "yes", "SCOREP_ENABLE_PROFILING": "no"}, "profile", True),
        ({"SCOREP_EXPERIMENT_DIRECTORY": "here"}, "output", "here"),
        ({"TRACETOP_EXPERIMENT_DIRECTORY": "mine", "SCOREP_EXPERIMENT_DIRECTORY": "theirs"}, "output", "mine"),
        ({"SCOREP_FILTERING_FILE": "f.filt"}, "filter", "f.filt"),
        ({"TRACETOP_INSTRUMENTER": "trace"}, "instrumenter", "trace"),
        ({"TRACETOP_C_CALLS": "off"}, "c_calls", False),
        ({"TRACETOP_ENABLE_INSTRUMENTER": "false"}, "instrumenter_enabled", False),
        ({"TRACETOP_VERBOSE": "1"}, "verbose", True),
        ({"TRACETOP_FORMAT": "chrome"}, "formats", ("chrome",)),
        ({"TRACETOP_TOTAL_MEMORY": ""}, "memory", 64 << 20),  # empty means unset
    ],
)
def test_environment(environ, key, value):
    assert parse(**environ)[key] == value


def test_command_line_beats_environment():
    configuration = parse("--memory", "2m", "--profile", TRACETOP_TOTAL_MEMORY="32M", SCOREP_ENABLE_PROFILING="false")
    assert configuration["memory"] == 2 << 20
    assert configuration["profile"] is True


@pytest.mark.parametrize(
    "name, value",
    [
        ("TRACETOP_TOTAL_MEMORY", "lots"),
        ("SCOREP_TOTAL_MEMORY", "100k"),
        ("TRACETOP_C_CALLS", "maybe"),
        ("TRACETOP_INSTRUMENTER", "magic"),
    ],
)
def test_environment_rejects(name, value):
    with pytest.raises(ConfigurationError, match=f"^{name}: "):
        parse(**{name: value})


def test_config_lines_name_every_option_once_in_table_order():
    lines = parse("--memory", "2m", "--no-c-calls", "--format", "otf2,chrome").lines()
    assert [line.split("=")[0] for line in lines] == [f"TRACETOP_{option.name}" for option in OPTIONS]
    assert "TRACETOP_TOTAL_MEMORY=2097152" in lines
    assert "TRACETOP_C_CALLS=false" in lines
    assert "TRACETOP_FORMAT=otf2,chrome" in lines
    assert "TRACETOP_EXPERIMENT_DIRECTORY=" in lines


def test_replace_keeps_the_rest():
    configuration = parse("--memory", "2m").replace("output", "/x")
    assert (configuration["output"], configuration["memory"]) == ("/x", 2 << 20)


def test_keywords():
    configuration = from_keywords(
        {"output": "exp", "memory": "2M", "c_calls": False, "trace": False}, {"TRACETOP_INSTRUMENTER": "trace"}
    )
    assert (configuration["output"], configuration["memory"], configuration["c_calls"]) == ("exp", 2 << 20, False)
    assert configuration["instrumenter"] == "trace"
    assert from_keywords({"memory": 4 << 20}, {})["memory"] == 4 << 20


def test_keywords_reject():
    with pytest.raises(TypeError, match="unknown option 'colour'"):
        from_keywords({"colour": "blue"}, {})
    with pytest.raises(ValueError, match=r"^memory: "):
        from_keywords({"memory": 1000}, {})


def test_score_p_flags_not_needed_are_set_aside():
    kept, not_needed = options.set_aside_not_needed(
        [
            "--thread=pthread",
            "--memory",
            "2m",
            "--compiler",
            "--nocompiler",
            "--io=runtime:posix",
            "--mpp=none",
            "--mpp=mpi",
            "--threads",
        ]
    )
    assert kept == ["--memory", "2m", "--mpp=mpi", "--threads"]
    assert not_needed == ["--thread=pthread", "--compiler", "--nocompiler", "--io=runtime:posix", "--mpp=none"]


@pytest.mark.parametrize(
    "text, value",
    [
        ("1", True),
        ("true", True),
        ("YES", True),
        ("on", True),
        ("0", False),
        ("False", False),
        ("no", False),
        ("off", False),
        (True, True),
        (False, False),
    ],
)
def test_parse_bool(text, value):
    assert options.parse_bool(text) is value
