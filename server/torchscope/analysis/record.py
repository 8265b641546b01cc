"""``@record``: the analysis's data classes, built without the ``dataclasses`` module.

Analysing a 54 MB trace in a fresh process takes about 0.35 s, and the ``dataclasses`` way
cost 25 ms of it before any work: ``import dataclasses`` (with ``inspect``, ``ast``, ``dis``
and ``tokenize`` under it) about 8 ms, and its code generation (one ``exec`` per method, six
per frozen class) about 0.5 ms for each of the data classes the analysis imports.
``record`` gives the same methods (``__init__`` with defaults and default factories,
``__repr__``, ``__eq__``, ``__hash__`` when frozen, a frozen ``__setattr__``/``__delattr__``,
``__match_args__``), compiling only ``__init__`` (one ``exec`` per class). :func:`replace`,
:func:`as_dict` and :func:`field_names` stand in for ``dataclasses.replace``, ``asdict`` and
``fields``.

Type checkers read a record as a dataclass (``dataclass_transform``, PEP 681). What it does
not do, as nothing here needs it: inheritance between records, ``ClassVar`` fields,
``__post_init__``, ordering, ``kw_only``, slots.
"""

from __future__ import annotations

from operator import attrgetter
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
    methods = {"__init__": _init(cls, names, frozen), **_compare(names)}
    if frozen:
        methods.update(__setattr__=_frozen_setattr, __delattr__=_frozen_delattr)
    else:
        methods["__hash__"] = None  # mutable and compared by value: not hashable
    for method, fn in methods.items():
        if method not in cls.__dict__:
            if fn is not None and method not in ("__setattr__", "__delattr__"):
                fn.__qualname__ = f"{cls.__qualname__}.{method}"
            setattr(cls, method, fn)
    setattr(cls, "__match_args__", names)  # noqa: B010  # mypy: not assignable on a type
    setattr(cls, _FIELDS, names)
    return cls


def _init(cls: type[Any], names: tuple[str, ...], frozen: bool) -> Any:
    """``__init__``, the one method compiled per class (its signature names the fields)."""
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
    source = [f"def __init__({', '.join(params)}):", *(f"    {line}" for line in body or ["pass"])]
    exec("\n".join(source), scope)  # code built above from field names only
    return scope["__init__"]


def _compare(names: tuple[str, ...]) -> dict[str, Any]:
    """``__repr__``, ``__eq__`` and ``__hash__`` over the fields, as dataclasses writes them
    (``hash`` of the tuple of fields), without compiling them."""
    key: Callable[[Any], tuple[Any, ...]]
    if len(names) == 1:
        one = attrgetter(names[0])
        key = lambda obj: (one(obj),)  # noqa: E731  # attrgetter of one name gives no tuple
    elif names:
        key = attrgetter(*names)
    else:
        key = lambda obj: ()  # noqa: E731

    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{self.__class__.__qualname__}({shown})"

    def __eq__(self: Any, other: object) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    def __hash__(self: Any) -> int:
        return hash(key(self))

    return {"__repr__": __repr__, "__eq__": __eq__, "__hash__": __hash__}


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


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
