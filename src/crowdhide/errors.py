"""Errors crowdhide raises for problems the *user* can fix.

Every class derives from :class:`CrowdhideError`. The command line turns these into one line
on standard error and exit code 2 (:class:`UnmetTargetError`: exit code 3); any other
exception escaping a command is a bug in crowdhide and is shown with its traceback.

The parameter errors also derive from the built-in :class:`ValueError` / :class:`TypeError`
so that ``except ValueError`` keeps working for callers of the library.

Examples
--------
>>> err = InvalidParameterError("epsilon must be > 0, got -1", parameter="epsilon", value=-1)
>>> isinstance(err, ValueError), isinstance(err, CrowdhideError), err.parameter
(True, True, 'epsilon')
>>> issubclass(ResourceLimitError, InvalidParameterError)
True
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BudgetExceededError",
    "CrowdhideError",
    "DataError",
    "DataTypeError",
    "InvalidParameterError",
    "MissingExtraError",
    "NodeFailureError",
    "OutputPathError",
    "ParameterTypeError",
    "ResourceLimitError",
    "UnmetTargetError",
]


class CrowdhideError(Exception):
    """Base class of every error caused by the user's input rather than by crowdhide.

    See Also
    --------
    InvalidParameterError : The most common subclass, a value out of range.
    MissingExtraError : An optional dependency is not installed.
    """


class InvalidParameterError(CrowdhideError, ValueError):
    """A parameter has a value outside its documented range.

    Parameters
    ----------
    message
        One line naming the parameter and echoing the value.
    parameter
        Name of the parameter (the library name; the CLI shows the option name).
    value
        The offending value.

    See Also
    --------
    ParameterTypeError : The value has the wrong type rather than the wrong range.
    ResourceLimitError : The value is valid but too large to compute with.
    """

    def __init__(self, message: str, *, parameter: str | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.parameter = parameter
        self.value = value


class ParameterTypeError(CrowdhideError, TypeError):
    """A parameter has the wrong type (e.g. a non-integral float where an integer is needed).

    Parameters
    ----------
    message
        One line naming the parameter and echoing the value.
    parameter
        Name of the parameter (the library name; the CLI shows the option name).
    value
        The offending value.

    See Also
    --------
    InvalidParameterError : The value has the right type but is out of range.
    """

    def __init__(self, message: str, *, parameter: str | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.parameter = parameter
        self.value = value


class ResourceLimitError(InvalidParameterError):
    """The input is valid in principle but would overflow, exhaust memory or run for hours.

    Parameters
    ----------
    message
        One line naming the parameter, echoing the value and giving the limit.
    parameter
        Name of the parameter (the library name; the CLI shows the option name).
    value
        The offending value.

    See Also
    --------
    InvalidParameterError : Its base class, a value outside the documented range.
    """


class DataError(CrowdhideError, ValueError):
    """A data file or data set cannot be used (missing column, wrong type, empty, ...).

    See Also
    --------
    DataTypeError : A column holds the wrong type of values.
    crowdhide.protocols.data.load_column : Loads a column and raises this error.
    """


class DataTypeError(CrowdhideError, TypeError):
    """A data column has the wrong type (e.g. text where numbers are needed).

    See Also
    --------
    DataError : Any other problem with a data file or data set.
    """


class OutputPathError(CrowdhideError, ValueError):
    """An output path cannot be written (it is a directory, its parent is not writable, ...).

    See Also
    --------
    CrowdhideError : The base class of every user error.
    """


class MissingExtraError(CrowdhideError, ImportError):
    """An optional dependency is not installed; the message gives the ``pip install`` line.

    Raised by :func:`crowdhide._extras.require`, the one place that imports optional
    modules. Also an :class:`ImportError`, so code that degrades gracefully without the
    module (a run without its plots) keeps catching it. The CLI exits with code 2.

    Parameters
    ----------
    message
        One line: what needs the module and the install command.
    extra
        Name of the extra that provides it (``pip install 'crowdhide[EXTRA]'``).
    module
        The module that could not be imported.

    See Also
    --------
    CrowdhideError : The base class of every user error.

    Examples
    --------
    >>> err = MissingExtraError("needs matplotlib", extra="plot", module="matplotlib")
    >>> isinstance(err, ImportError), err.extra, err.name
    (True, 'plot', 'matplotlib')
    """

    def __init__(self, message: str, *, extra: str, module: str) -> None:
        super().__init__(message, name=module)
        self.extra = extra
        self.module = module


class UnmetTargetError(CrowdhideError, ValueError):
    """A run, plan or calibration certifies less privacy than its target.

    Also a :class:`ValueError` (what calibrations raised before) so existing ``except
    ValueError`` callers keep working; the CLI checks for it first (exit code 3). Its
    message is one line giving the certified figure next to the target.

    See Also
    --------
    crowdhide.calibrate : Calibrations that raise it when no parameter meets the target.
    BudgetExceededError : A run refused because it would exceed a budget.
    """


class BudgetExceededError(CrowdhideError, ValueError):
    """A run would take a population past its privacy budget; it was refused before sending.

    See Also
    --------
    crowdhide.Ledger : The privacy budget ledger that refuses such a run.
    UnmetTargetError : A run that certifies less than its target.
    """


class RoundOverrunError(CrowdhideError):
    """A round of a tls run took longer than its fixed length (CLI exit code 4).

    Rounds have a fixed length so that their timing on the wire does not depend on the data;
    an overrun is reported, never absorbed by stretching the round.
    """


class NodeFailureError(CrowdhideError):
    """A tls run lost a node or frames: dead nodes, lost or refused frames, counted per link
    (CLI exit code 5). The message names what the network observer already sees, never
    which source's message was lost.

    See Also
    --------
    RoundOverrunError : A round that took longer than its fixed length.
    """
