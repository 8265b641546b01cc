"""``@record``: the analysis's data classes, built without the ``dataclasses`` module.

Analysing a 54 MB trace in a fresh process takes about 0.35 s, and the ``dataclasses`` way
cost 25 ms of it before any work: ``import dataclasses`` (with ``inspect``, ``ast``, ``dis``
and ``tokenize`` under it) about 8 ms, and its code generation (one ``exec`` per method, six
per frozen class) about 0.5 ms for each of the data classes the analysis imports.
``record`` writes the same methods (``__init__`` with defaults and default factories,
``__repr__``, ``__eq__``, ``__hash__`` when frozen, a frozen ``__setattr__``/``__delattr__``,
``__match_args__``) in one ``exec`` per class. :func:`replace`, :func:`as_dict` and
:func:`field_names` stand in for ``dataclasses.replace``, ``asdict`` and ``fields``.

Type checkers read a record as a dataclass (``dataclass_transform``, PEP 681). What it does
not do, as nothing here needs it: inheritance between records, ``ClassVar`` fields,
``__post_init__``, ordering, ``kw_only``, slots.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar, overload

_T = TypeVar("_T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: Any) -> Callable[[_T], _T]:
        return lambda f: f


_FIELDS = "__record_fields__"
_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen record (as ``dataclasses.FrozenInstanceError``)."""


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], _T]) -> _T:
    """A field whose default is made afresh for each instance (``dataclasses.field``)."""
    return _Factory(default_factory)  # type: ignore[return-value]  # replaced by @record


@overload
def record(cls: type[_T], /) -> type[_T]: ...


@overload
def record(*, frozen: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(field,))
def record(cls: type[_T] | None = None, /, *, frozen: bool = False) -> Any:
    """``@record`` or ``@record(frozen=True)``: a dataclass of the annotated fields."""

    def build(c: type[_T]) -> type[_T]:
        return _build(c, frozen)

    return build if cls is None else build(cls)


def _build(cls: type[_T], frozen: bool) -> type[_T]:
    # The class's own annotations, in order (inspect.get_annotations: the import avoided).
    names = tuple(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063
    scope: dict[str, Any] = {"_ts_set": object.__setattr__, "_ts_missing": _MISSING}
    params, body = ["self"], []
    defaulted = False
    for name in names:
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, _Factory):
            scope[f"_ts_make_{name}"] = value.make
            params.append(f"{name}=_ts_missing")
            expr = f"_ts_make_{name}() if {name} is _ts_missing else {name}"
            delattr(cls, name)  # as dataclasses does: the class has no shared default
        elif value is not _MISSING:
            scope[f"_ts_default_{name}"] = value
            params.append(f"{name}=_ts_default_{name}")
            expr = name
        elif defaulted:
            raise TypeError(
                f"{cls.__qualname__}: {name!r} has no default but follows a field with one"
            )
        else:
            params.append(name)
            expr = name
        defaulted = defaulted or value is not _MISSING
        body.append(f"_ts_set(self, {name!r}, {expr})" if frozen else f"self.{name} = {expr}")
    fields = "".join(f"self.{n}," for n in names)
    others = "".join(f"other.{n}," for n in names)
    shown = ", ".join(f"{n}={{self.{n}!r}}" for n in names)
    source = [
        f"def __init__({', '.join(params)}):",
        *(f"    {line}" for line in body or ["pass"]),
        "def __repr__(self):",
        f"    return self.__class__.__qualname__ + f'({shown})'",
        "def __eq__(self, other):",
        "    if other.__class__ is self.__class__:",
        f"        return ({fields}) == ({others})",
        "    return NotImplemented",
        "def __hash__(self):",
        f"    return hash(({fields}))",
        "def __setattr__(self, name, value):",
        "    raise _ts_frozen(f'cannot assign to field {name!r}')",
        "def __delattr__(self, name):",
        "    raise _ts_frozen(f'cannot delete field {name!r}')",
    ]
    scope["_ts_frozen"] = FrozenInstanceError
    exec("\n".join(source), scope)  # code built above from field names only
    made = ["__init__", "__repr__", "__eq__"] + (
        ["__hash__", "__setattr__", "__delattr__"] if frozen else []
    )
    for method in made:
        if method not in cls.__dict__:
            fn = scope[method]
            fn.__qualname__ = f"{cls.__qualname__}.{method}"
            setattr(cls, method, fn)
    if not frozen and "__hash__" not in cls.__dict__:
        cls.__hash__ = None  # type: ignore[assignment]  # mutable and compared by value
    setattr(cls, "__match_args__", names)  # noqa: B010  # mypy: not assignable on a type
    setattr(cls, _FIELDS, names)
    return cls


def field_names(cls: type[Any] | object) -> tuple[str, ...]:
    """The fields of a record (class or instance), in order."""
    found: tuple[str, ...] | None = getattr(cls, _FIELDS, None)
    if found is None:
        raise TypeError(f"{cls!r} is not a record")
    return found


def replace(obj: _T, /, **changes: Any) -> _T:
    """A copy of the record ``obj`` with ``changes`` (``dataclasses.replace``)."""
    names = field_names(obj)
    unknown = set(changes).difference(names)
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field {sorted(unknown)[0]!r}")
    values = {n: changes[n] if n in changes else getattr(obj, n) for n in names}
    return type(obj)(**values)


def as_dict(obj: object) -> dict[str, Any]:
    """The record ``obj`` as a dict, records inside it too (``dataclasses.asdict``; leaves
    are shared, not deep-copied: every caller turns the result into JSON)."""
    return {n: _plain(getattr(obj, n)) for n in field_names(obj)}


def _plain(value: Any) -> Any:
    names = getattr(type(value), _FIELDS, None)
    if names is not None:
        return {n: _plain(getattr(value, n)) for n in names}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple
        return type(value)(*map(_plain, value))
    if isinstance(value, (list, tuple)):
        return type(value)(map(_plain, value))
    if isinstance(value, dict):
        return type(value)((_plain(k), _plain(v)) for k, v in value.items())
    return value
