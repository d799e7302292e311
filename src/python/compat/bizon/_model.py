"""The model base class used by the compatibility package.

With pydantic importable the models are real pydantic models, so a custom source's config class,
its `Field(...)` declarations and validators behave as they do with the original: pydantic 2
from bizon's own site folder (src/python/requirements.txt), unless the user's virtualenv, which
comes first on sys.path, brings another version (v1 works too).
Without pydantic, a small declared-fields model stands in: it checks required fields and simple
type annotations (str, int, float, bool, list, dict, Optional, Union, Literal, Enum, nested
models), fills defaults and ignores unknown keys.
"""

from __future__ import annotations

import enum
import typing

try:  # pragma: no cover - which branch runs depends on the machine
    import pydantic as _pydantic

    PYDANTIC_VERSION = int(_pydantic.VERSION.split(".")[0])
except ImportError:  # pragma: no cover
    _pydantic = None
    PYDANTIC_VERSION = 0


def dump(model):
    """The model as a plain dict, whichever base class it has."""
    if hasattr(model, "model_dump"):
        return model.model_dump()
    return model.dict()


if _pydantic is not None:
    BaseModel = _pydantic.BaseModel
    Field = _pydantic.Field
    ValidationError = _pydantic.ValidationError
else:
    _MISSING = object()

    class ValidationError(ValueError):
        """Raised when a model is built from values that do not match its declaration."""

        def __init__(self, model_name, errors):
            self.model_name = model_name
            self._errors = errors
            lines = [f"{len(errors)} validation error{'s' if len(errors) != 1 else ''} for {model_name}"]
            for location, message in errors:
                lines.append(location)
                lines.append(f"  {message}")
            super().__init__("\n".join(lines))

        def errors(self):
            return [{"loc": tuple(location.split(".")), "msg": message} for location, message in self._errors]

    class FieldInfo:
        def __init__(self, default=_MISSING, *, default_factory=None, description=None, **extra):
            self.default = _MISSING if default is Ellipsis else default
            self.default_factory = default_factory
            self.description = description
            self.extra = extra

    def Field(default=_MISSING, **kwargs):  # noqa: N802 - pydantic's spelling
        return FieldInfo(default, **kwargs)

    class _Invalid(Exception):
        pass

    def _type_name(annotation):
        return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")

    def _coerce(annotation, value):
        if annotation is typing.Any or annotation is None or annotation is object:
            return value
        if isinstance(annotation, str):  # An unresolved forward reference: accept as is.
            return value
        origin = typing.get_origin(annotation)
        arguments = typing.get_args(annotation)
        if origin is typing.Union or type(annotation).__name__ == "UnionType":
            if value is None and type(None) in arguments:
                return None
            problems = []
            for member in arguments:
                if member is type(None):
                    continue
                try:
                    return _coerce(member, value)
                except _Invalid as problem:
                    problems.append(str(problem))
            raise _Invalid("; ".join(problems) or "value is not allowed")
        if origin is typing.Literal:
            for allowed in arguments:
                if value == allowed or (isinstance(allowed, enum.Enum) and value == allowed.value):
                    return allowed
            raise _Invalid(f"unexpected value {value!r}; permitted: {', '.join(repr(a.value if isinstance(a, enum.Enum) else a) for a in arguments)}")
        if origin in (list, typing.List, tuple, set):
            if not isinstance(value, (list, tuple)):
                raise _Invalid(f"value is not a valid list (got {type(value).__name__})")
            item = arguments[0] if arguments else typing.Any
            return [_coerce(item, element) for element in value]
        if origin in (dict, typing.Dict):
            if not isinstance(value, dict):
                raise _Invalid(f"value is not a valid dict (got {type(value).__name__})")
            item = arguments[1] if len(arguments) == 2 else typing.Any
            return {key: _coerce(item, element) for key, element in value.items()}
        if isinstance(annotation, type):
            if issubclass(annotation, enum.Enum):
                if isinstance(value, annotation):
                    return value
                try:
                    return annotation(value)
                except ValueError:
                    raise _Invalid(f"value is not a valid enumeration member; permitted: {', '.join(repr(m.value) for m in annotation)}") from None
            if issubclass(annotation, BaseModel):
                if isinstance(value, annotation):
                    return value
                if not isinstance(value, dict):
                    raise _Invalid(f"value is not a valid dict (got {type(value).__name__})")
                try:
                    return annotation(**value)
                except ValidationError as problem:
                    raise _Invalid(str(problem)) from None
            if annotation is bool:
                if isinstance(value, bool):
                    return value
                raise _Invalid(f"value could not be parsed to a boolean (got {value!r})")
            if annotation is int:
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
                raise _Invalid(f"value is not a valid integer (got {value!r})")
            if annotation is float:
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    return float(value)
                raise _Invalid(f"value is not a valid float (got {value!r})")
            if annotation is str:
                if isinstance(value, str):
                    return value
                raise _Invalid(f"str type expected (got {type(value).__name__})")
            if annotation in (list, dict):
                if isinstance(value, annotation):
                    return value
                raise _Invalid(f"value is not a valid {annotation.__name__} (got {type(value).__name__})")
            if not isinstance(value, annotation):
                raise _Invalid(f"expected {_type_name(annotation)} (got {type(value).__name__})")
        return value

    class BaseModel:
        """Declared-fields model: `name: type = default` class attributes, keyword construction."""

        __bizon_fields__: typing.ClassVar[dict] = {}
        __bizon_extra__: typing.ClassVar[str] = "ignore"

        def __init_subclass__(cls, **kwargs):
            super().__init_subclass__(**kwargs)
            fields = {}
            for base in reversed(cls.__mro__[1:]):
                fields.update(base.__dict__.get("__bizon_fields__", {}))
            for name in cls.__dict__.get("__annotations__", {}):
                if name.startswith("_"):
                    continue
                default = cls.__dict__.get(name, _MISSING)
                if not isinstance(default, FieldInfo):
                    default = FieldInfo(default)
                fields[name] = default
            cls.__bizon_fields__ = fields
            for name, info in fields.items():
                if name in cls.__dict__ and isinstance(cls.__dict__[name], FieldInfo):
                    delattr(cls, name)
            cls.__bizon_hints__ = None

        @classmethod
        def _hints(cls):
            if cls.__dict__.get("__bizon_hints__") is None:
                try:
                    cls.__bizon_hints__ = typing.get_type_hints(cls)
                except Exception:  # Unresolvable names: fall back to the raw annotations.
                    hints = {}
                    for klass in reversed(cls.__mro__):
                        hints.update(klass.__dict__.get("__annotations__", {}))
                    cls.__bizon_hints__ = hints
            return cls.__bizon_hints__

        def __init__(self, **values):
            hints = self._hints()
            errors = []
            for name, info in self.__bizon_fields__.items():
                if name in values:
                    try:
                        value = _coerce(hints.get(name, typing.Any), values[name])
                    except _Invalid as problem:
                        errors.append((name, str(problem)))
                        continue
                elif info.default_factory is not None:
                    value = info.default_factory()
                elif info.default is not _MISSING:
                    value = info.default
                else:
                    errors.append((name, "field required"))
                    continue
                object.__setattr__(self, name, value)
            unknown = [name for name in values if name not in self.__bizon_fields__]
            if unknown and self.__bizon_extra__ == "forbid":
                errors.extend((name, "extra fields not permitted") for name in unknown)
            elif unknown and self.__bizon_extra__ == "allow":
                for name in unknown:
                    object.__setattr__(self, name, values[name])
            if errors:
                raise ValidationError(type(self).__name__, errors)

        def model_dump(self):
            def plain(value):
                if isinstance(value, BaseModel):
                    return value.model_dump()
                if isinstance(value, list):
                    return [plain(v) for v in value]
                if isinstance(value, dict):
                    return {k: plain(v) for k, v in value.items()}
                return value

            return {name: plain(getattr(self, name)) for name in self.__bizon_fields__}

        dict = model_dump

        def __eq__(self, other):
            return type(self) is type(other) and self.model_dump() == other.model_dump()

        def __repr__(self):
            inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__bizon_fields__)
            return f"{type(self).__name__}({inner})"


# Models that keep (or refuse) keys they do not declare, whichever base class is in use.
if PYDANTIC_VERSION >= 2:

    class ExtraAllowModel(BaseModel):
        model_config = _pydantic.ConfigDict(extra="allow")

    class ExtraForbidModel(BaseModel):
        model_config = _pydantic.ConfigDict(extra="forbid")

elif PYDANTIC_VERSION == 1:  # pragma: no cover - a user's virtualenv with pydantic 1

    class ExtraAllowModel(BaseModel):
        class Config:
            extra = "allow"

    class ExtraForbidModel(BaseModel):
        class Config:
            extra = "forbid"

else:  # pragma: no cover

    class ExtraAllowModel(BaseModel):
        __bizon_extra__ = "allow"

    class ExtraForbidModel(BaseModel):
        __bizon_extra__ = "forbid"
