"""Did-you-mean: the command or option the user probably meant when what they typed is not one."""

import argparse
import difflib


def closest(word, choices):
    """The choice nearest to `word`, or None when none is near enough to suggest."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.7)
    return found[0] if found else None


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, whose complaint about an unknown option names the option it probably meant."""

    def error(self, message):
        prefix = "unrecognized arguments: "
        if message.startswith(prefix):
            options = [option for action in self._actions for option in action.option_strings]
            for word in message[len(prefix):].split():
                guess = closest(word.split("=", 1)[0], options) if word.startswith("-") else None
                if guess:
                    message += f" (did you mean {guess}?)"
                    break
        super().error(message)
