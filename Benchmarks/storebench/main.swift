print("storebench")
