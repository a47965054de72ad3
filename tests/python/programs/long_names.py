"""A function with a long qualified name that takes a small share of the run (a narrow box in the timeline, the
flame graph and the report), beside one that takes most of it."""
import time


class NumericalIntegrationWorkspace:
    class AdaptiveQuadratureRefinement:
        def integrate_subinterval_recursively(self, seconds):
            time.sleep(seconds)


def most_of_the_run():
    time.sleep(0.3)


def main():
    most_of_the_run()
    NumericalIntegrationWorkspace.AdaptiveQuadratureRefinement().integrate_subinterval_recursively(0.08)
    most_of_the_run()


if __name__ == "__main__":
    main()
