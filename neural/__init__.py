"""neural"""
