"""One grammar for numbers written as text (issue 15 §5): the CLI, Markdown and the worker
share `Param.coerce`; the browser's URL parser mirrors it (tests/test_url_state.py)."""

from __future__ import annotations

import pytest

from widgets_py import ParamError, run

from widgets_py.engine import registry
from widgets_py.__main__ import main
from widgets_py.engine.params import parse_number

# text the CLI must refuse for an int parameter (roofline batch, 1..256)
BAD_INT_TEXT = ["0x10", " 16 ", "16 ", "1_6", "٨", "８", "8.0", "1e1", "+8", "", "-", "8e0", "0o10", "0b1", "१६", "8\n"]
# text the CLI must refuse for a float parameter (cost price, 0.25..12)
BAD_FLOAT_TEXT = ["0,25", ".25", "1.", "inf", "nan", "0x1p-2", "1_0", " 1", "１", "1e", "1.5.0", "+1"]
GOOD = [("roofline", "batch", "16", 16), ("roofline", "batch", "016", 16), ("cost", "price", "0.25", 0.25),
        ("cost", "price", "1e0", 1.0), ("cost", "price", "12", 12.0), ("quantize", "outliers", "2.5E1", 25.0)]


@pytest.mark.parametrize("text", BAD_INT_TEXT)
def test_cli_refuses_ill_written_ints(text, capsys):
    assert main(["run", "roofline", f"batch={text}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "batch" in err[0] and "1..256" in err[0], err


@pytest.mark.parametrize("text", BAD_FLOAT_TEXT)
def test_cli_refuses_ill_written_floats(text, capsys):
    assert main(["run", "cost", f"price={text}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "price" in err[0] and "0.25..12" in err[0], err


@pytest.mark.parametrize("name, key, text, value", GOOD)
def test_well_written_numbers_are_accepted(name, key, text, value):
    param = next(p for p in registry.get(name).params if p.name == key)
    got = param.coerce(text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("raw", [10**400, -10**400, 2**63, 10**20])
def test_huge_ints_raise_the_parameter_error_not_overflow(raw):
    with pytest.raises(ParamError, match="batch.*fora del rang"):
        run("roofline", {"batch": raw})
    with pytest.raises(ParamError, match="price.*fora del rang"):
        run("cost", {"price": raw})


@pytest.mark.parametrize("raw", ["1e999", "-1e999"])
def test_float_text_overflowing_to_infinity_is_out_of_range(raw):
    with pytest.raises(ParamError, match="price.*fora del rang"):
        run("cost", {"price": raw})


@pytest.mark.parametrize("raw", [True, 8.0, 16.5, None, [8], {"v": 8}])
def test_json_values_of_the_wrong_type_are_refused(raw):
    with pytest.raises(ParamError, match="batch"):
        run("roofline", {"batch": raw})


@pytest.mark.parametrize("raw", ["1", "yes", "on", "sí", "True", " true", 1])
def test_bools_are_true_or_false_only(raw):
    with pytest.raises(ParamError, match="variable_head"):
        registry.validate_params("kv_cache", {"variable_head": raw})


def test_repeated_keys_are_refused_by_the_cli(capsys):
    assert main(["run", "roofline", "batch=8", "batch=16"]) == 2
    assert "repetit" in capsys.readouterr().err


@pytest.mark.parametrize("text, kind, value", [("7", "int", 7), ("-3", "int", -3), ("7", "float", 7),
                                               ("1e2", "float", 100.0), ("1e2", "int", None), ("0.5", "int", None)])
def test_parse_number_grammar(text, kind, value):
    assert parse_number(text, kind) == value
