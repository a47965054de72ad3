import builtins
import os
import sys

import pytest
from tracetop.messages import CommandError
from tracetop.options import FLAGS_WITH_VALUE
from tracetop.program import Code, Module, ModuleNotRunnable, Script, split_command_line


@pytest.mark.parametrize(
    "arguments, options, program",
    [
        (["x.py"], [], Script("x.py", ())),
        (["x.py", "-v", "--memory", "1"], [], Script("x.py", ("-v", "--memory", "1"))),
        (["-v", "--memory", "2m", "x.py", "a"], ["-v", "--memory", "2m"], Script("x.py", ("a",))),
        (["--memory=2m", "x.py"], ["--memory=2m"], Script("x.py", ())),
        (["--output", "-odd-", "x.py"], ["--output", "-odd-"], Script("x.py", ())),
        (["--no-c-calls", "-m", "json.tool", "-h"], ["--no-c-calls"], Module("json.tool", ("-h",))),
        (["-mjson.tool", "f"], [], Module("json.tool", ("f",))),
        (["-c", "print(1)", "a", "-v"], [], Code("print(1)", ("a", "-v"))),
        (["-cprint(1)"], [], Code("print(1)", ())),
        (["-v", "--", "-weird.py", "a"], ["-v"], Script("-weird.py", ("a",))),
        (["--bogus", "x.py"], ["--bogus"], Script("x.py", ())),
        (["-v"], ["-v"], None),
        ([], [], None),
        (["-v", "--"], ["-v"], None),
    ],
)
def test_split_command_line(arguments, options, program):
    assert split_command_line(arguments, FLAGS_WITH_VALUE) == (options, program)


@pytest.mark.parametrize("flag", ["-m", "-c"])
def test_split_command_line_needs_a_value(flag):
    with pytest.raises(CommandError, match=f"argument {flag}: expected one argument"):
        split_command_line(["-v", flag], FLAGS_WITH_VALUE)


def test_script(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("x = 1\n")
    program = Script(str(script), ("a",))
    loaded = program.load()
    assert loaded.argv == [str(script), "a"]
    assert loaded.code.co_filename == str(script)
    assert loaded.main.__name__ == "__main__"
    assert loaded.main.__file__ == str(script)
    assert loaded.main.__spec__ is None
    assert program.search_path() == os.path.realpath(tmp_path)
    assert program.describe() == str(script)


def test_script_found_through_a_link_searches_where_it_lies(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "prog.py").write_text("")
    (tmp_path / "link.py").symlink_to(tmp_path / "real" / "prog.py")
    assert Script(str(tmp_path / "link.py"), ()).search_path() == os.path.realpath(tmp_path / "real")


def test_missing_script():
    with pytest.raises(CommandError, match=r"^cannot open 'nowhere\.py': No such file or directory$"):
        Script("nowhere.py", ()).load()


def test_module(tmp_path, monkeypatch):
    (tmp_path / "tool_pkg").mkdir()
    (tmp_path / "tool_pkg" / "__init__.py").write_text("")
    (tmp_path / "tool_pkg" / "__main__.py").write_text("y = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = Module("tool_pkg", ("b",)).load()
    origin = str(tmp_path / "tool_pkg" / "__main__.py")
    assert loaded.argv == [origin, "b"]
    assert loaded.main.__spec__.name == "tool_pkg.__main__"
    assert loaded.main.__package__ == "tool_pkg"
    assert loaded.main.__file__ == origin
    assert Module("tool_pkg", ()).describe() == "-m tool_pkg"
    assert Module("tool_pkg", ()).search_path() == os.getcwd()


def test_missing_module():
    with pytest.raises(ModuleNotRunnable, match="No module named no_such_module_here") as failure:
        Module("no_such_module_here", ()).load()
    assert failure.value.exit_status == 1


def test_code():
    loaded = Code("z = 3", ("c",)).load()
    assert loaded.argv == ["-c", "c"]
    assert loaded.code.co_filename == "<string>"
    assert not hasattr(loaded.main, "__file__")
    assert Code("", ()).search_path() == ""


def test_fresh_main_is_like_the_interpreters():
    main = Code("", ()).load().main
    assert main is not sys.modules["__main__"]
    assert list(vars(main))[:5] == ["__name__", "__doc__", "__package__", "__loader__", "__spec__"]
    assert main.__builtins__ is builtins
