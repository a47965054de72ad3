"""Did-you-mean: the command or option the user probably meant when what they typed is not one."""

import argparse
import difflib
import sys


def closest(word, choices):
    """The choice nearest to `word`, or None when none is near enough to suggest."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.7)
    return found[0] if found else None


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, whose complaints name the option the user probably meant when one they typed is not
    an option: as an unrecognized argument, and where a misspelled option leaves a required one missing."""

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message):
        options = {option for action in self._actions for option in action.option_strings}
        for word in getattr(self, "_given", ()):
            typed = word.split("=", 1)[0]
            guess = closest(typed, options) if typed.startswith("-") and typed not in options else None
            if guess:
                unrecognized = message.startswith("unrecognized arguments: ")
                message += f" (did you mean {guess}?)" if unrecognized else f" ({typed}: did you mean {guess}?)"
                break
        super().error(message)
