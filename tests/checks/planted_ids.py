"""Registers two planted envs for ``gem validate --import tests.checks.planted_ids`` (the CLI's tests)."""

import gem

gem.register("planted:Clean", "tests.checks.planted:ArithmeticEnv", family="planted", description="clean")
gem.register("planted:HedgePays", "tests.checks.planted:HedgePaysEnv", family="planted", description="pays a hedge")
