"""Fields: a few named values compared by value, as a named tuple would be. A plain class, because making a
named tuple type runs generated code: some 1.5 million instructions each at the start of every measured process."""


class Fields:
    """Subclasses name their fields in __slots__ and are made from their values, in that order."""

    __slots__ = ()

    def __init__(self, *values):
        if len(values) != len(self.__slots__):
            raise TypeError(f"{type(self).__name__} takes {len(self.__slots__)} values ({len(values)} given)")
        for name, value in zip(self.__slots__, values):
            setattr(self, name, value)

    def __iter__(self):
        return (getattr(self, name) for name in self.__slots__)

    def __eq__(self, other):
        return type(other) is type(self) and tuple(self) == tuple(other)

    def __hash__(self):
        return hash(tuple(self))

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"
