from .arena import ArenaPlan, Block, plan_arena
from .check import PlanError, check_plan

__all__ = ["ArenaPlan", "Block", "plan_arena", "check_plan", "PlanError"]
