"""Source callbacks. The engine never invokes them (as in the original); kept for imports."""

from abc import ABC, abstractmethod


class AbstractSourceCallback(ABC):
    def __init__(self, config=None):
        self.config = config

    @abstractmethod
    def on_iterations_written(self, iterations):
        pass


class NoOpSourceCallback(AbstractSourceCallback):
    def on_iterations_written(self, iterations):
        pass
